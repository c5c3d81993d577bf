; attncert prove: agreement query n1_agreement_L5_r1
(define-fun H0_0 () Real 0.0)
(define-fun Y27 () Real 0.0)
(define-fun Y28 () Real H0_0)
(define-fun U0 () Real (let ((p (+ Y28 (- (/ 1.0 4.0))))) (ite (> p 0.0) p 0.0)))
(define-fun U1 () Real (let ((p (+ Y28 (- (/ 3.0 4.0))))) (ite (> p 0.0) p 0.0)))
(define-fun O27 () Real (+ Y27 (* 2.0 U0) (* (- 2.0) U1)))
(assert (not (= O27 (ite false 1.0 0.0))))
(check-sat)
