; attncert prove: agreement query n1_agreement_L7_r1
(declare-fun b6_1 () Bool)
(define-fun Y21 () Real (ite b6_1 1.0 0.0))
(define-fun Y22 () Real 0.0)
(define-fun U0 () Real (let ((p Y21)) (ite (> p 0.0) p 0.0)))
(define-fun O22 () Real (+ Y22 (* (- 1.0) U0) 1.0))
(assert (not (= (> O22 (/ 1.0 2.0)) (not b6_1))))
(check-sat)
