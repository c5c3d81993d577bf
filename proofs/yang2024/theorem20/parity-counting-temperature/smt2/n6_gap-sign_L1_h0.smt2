; attncert prove: gap-sign query n6_gap-sign_L1_h0
(declare-fun cL_s1_2 () Int)
(assert (<= 0 cL_s1_2 1))
(assert (or (and (< (- (/ 1.0 4.0)) (+ (- (/ 1.0 4.0)) (* (/ 3.0 4.0) (to_real cL_s1_2)))) (< (+ (- (/ 1.0 4.0)) (* (/ 3.0 4.0) (to_real cL_s1_2))) (/ 1.0 4.0)))))
(check-sat)
