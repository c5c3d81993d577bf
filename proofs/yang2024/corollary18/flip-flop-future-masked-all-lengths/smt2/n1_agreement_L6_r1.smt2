; attncert prove: agreement query n1_agreement_L6_r1
(define-fun H0_0 () Real 0.0)
(define-fun Y18 () Real 0.0)
(define-fun Y19 () Real H0_0)
(define-fun U0 () Real (let ((p (+ Y19 (- (/ 1.0 4.0))))) (ite (> p 0.0) p 0.0)))
(define-fun U1 () Real (let ((p (+ Y19 (- (/ 3.0 4.0))))) (ite (> p 0.0) p 0.0)))
(define-fun O18 () Real (+ Y18 (* 2.0 U0) (* (- 2.0) U1)))
(assert (not (= O18 (ite false 1.0 0.0))))
(check-sat)
