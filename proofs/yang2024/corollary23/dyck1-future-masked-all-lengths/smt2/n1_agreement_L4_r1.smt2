; attncert prove: agreement query n1_agreement_L4_r1
(declare-fun b6_1 () Bool)
(define-fun Y12 () Real (ite b6_1 1.0 0.0))
(define-fun Y13 () Real 0.0)
(define-fun U0 () Real (let ((p Y12)) (ite (> p 0.0) p 0.0)))
(define-fun O13 () Real (+ Y13 (* (- 1.0) U0) 1.0))
(assert (not (= O13 (ite (not b6_1) 1.0 0.0))))
(check-sat)
