; attncert prove: agreement query n1_agreement_L1_r1
(define-fun H0_0 () Real 0.0)
(define-fun Y4 () Real 0.0)
(define-fun Y5 () Real H0_0)
(define-fun U0 () Real (let ((p (+ Y5 (- (/ 1.0 4.0))))) (ite (> p 0.0) p 0.0)))
(define-fun U1 () Real (let ((p (+ Y5 (- (/ 3.0 4.0))))) (ite (> p 0.0) p 0.0)))
(define-fun O4 () Real (+ Y4 (* 2.0 U0) (* (- 2.0) U1)))
(assert (not (= (> O4 (/ 1.0 2.0)) false)))
(check-sat)
