; attncert prove: agreement query n1_agreement_L7_r1
(declare-fun b6_1 () Bool)
(define-fun Y30 () Real (ite b6_1 1.0 0.0))
(define-fun Y31 () Real 0.0)
(define-fun U0 () Real (let ((p Y30)) (ite (> p 0.0) p 0.0)))
(define-fun O31 () Real (+ Y31 (* (- 1.0) U0) 1.0))
(assert (not (= (> O31 (/ 1.0 2.0)) (not b6_1))))
(check-sat)
