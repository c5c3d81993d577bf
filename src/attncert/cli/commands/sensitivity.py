"""``attncert sensitivity MODEL --n 16,64,256,1024``: Lemma 5 measured and bounded.

For each n: the largest change of the readout when one input symbol is exchanged
(exhaustive when |Σ|^n ≤ 2^12, else hill-climbing search), a witness pair, and
Lemma 5's bound computed from the weights (with the supplement's term, and the
published inequality for comparison); then the fitted decay exponent.

    attncert sensitivity zoo:soft_parity --n 16,64,256,1024 --plot out.png
    attncert sensitivity model.json --n 8,32 --metric probability --json
    attncert sensitivity zoo:soft_parity --n 16,64,256 --parity-rate

``--parity-rate`` adds Proposition (PARITY rate) (``docs/parity-rate.md``): the accept
logit along the one-residue-class family, its margin and second-difference mass per n
(exact where the model allows), and for one-layer models the rigorous constant C with
mass ≤ C/N, so margin ≤ C/(4(K−1)N) = O(1/n²) for any model of this shape. The
Proposition is proved for one layer and a conjecture for two or more (the output says
which). The accepted parity is read from the model's ``meta`` (or ``--accepts even|odd``);
if the model does not declare one, "even" is assumed and the output says so.

``--certify`` adds, per n, the *certified* B(n) — a sound bound on |Δlogit| over every
string of length n and every changeable position (attncert.soft.certified: outward-
rounded bound propagation, LayerNorm, GELU, masks, biases, mean readout), re-derived by
the independent checker (attncert.kernel.soft.checker) — beside the measured maximum and Lemma
5's number, with their ratios; a bound that is only the logit's range over all strings
is labelled "range cap". On {0,1}ⁿ it prints Theorem 6's certified cross-entropy floor
log(1 + e^{−B/2}) beside the measured PARITY cross-entropy (over all 2ⁿ strings when
2ⁿ ≤ 65536, else ``--samples`` sampled ones, ± 3 s.e.; labels from ``--accepts`` or the
model's meta) and log 2 — both labelled PARITY's: Theorem 6 is about PARITY (and 2-Dyck),
whatever language the model was trained for; for a 2-Dyck next-symbol model the
certified bracket-type floor.

    attncert sensitivity zoo:soft_parity_lm --n 256,1024 --certify --save 'cert-{n}.json'

With --certify the verdict (attncert.verdicts) and exit status are CERTIFIED (0: every
bound certified and checked), CERTIFIED-TRIVIAL (4: checked, but at every n the bound is
only the logit's certified range, a cap), OUTSIDE-THEOREM (5: checked, but a hypothesis of Lemma 5
fails for the model — the bounds hold at these n, the asymptotics do not apply),
REFUTED (1: the checker rejected a certificate, or a measured change exceeded a
certified bound), UNDECIDED (3: a bound overflowed float64); bad input exits 2. A model outside Lemma 5
(hard or masked attention, temperature growing with n, unbounded positional encodings)
is still measured; the report says which hypothesis fails instead of giving a bound.

``--uniform`` adds Lemma 5 *uniformly in n* (attncert.soft.certified.uniform): a certified
constant K with B(n) ≤ K/n for **every** n ≥ N₀ (``--n0``, default 64) — one propagation
valid for all lengths at once, re-derived by attncert.kernel.uniform.checker — beside Lemma
5's constant as published for the same weights, the logit's range Z over every length
(the cap), the length from which K/n < Z, and on {0,1}ⁿ Theorem 6 for the model at every
n ≥ N₀: E[CE_n] ≥ log(1 + e^{−min(K/n, Z)/2}) ≥ log(1 + e^{−K/(2n)}) → log 2. Each measured
change at an n ≥ N₀ must be ≤ K/n (else REFUTED). A masked head, a temperature growing
with n, an unbounded positional feature or a learned position table gives OUTSIDE-THEOREM
with the reason.

    attncert sensitivity zoo:soft_parity --uniform --n0 64 --n 64,256,1024 --time-budget 5
    attncert sensitivity zoo:soft_parity --uniform --save-uniform uniform.json
    attncert soft-check uniform.json

``--save-uniform F`` says what it did: "uniform certificate written to F", or "no uniform
certificate written to F: <reason>" (OUTSIDE-THEOREM, UNDECIDED: there is no certificate);
with ``--json`` the same in ``save_uniform`` ({path, written, message}).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from attncert import limits
from attncert.cli.args import integer, quote, seconds
from attncert.cli.common import add_json_flag, add_model_argument, load_model_arg, print_json
from attncert.errors import InputError
from attncert.kernel import verdict as V
from attncert.verdicts import Verdict

_LENGTH = integer(
    minimum=1,
    maximum=limits.SENSITIVITY_MAX_N,
    reason="the search enumerates positions and |Σ|^n must stay machine-sized",
)


def _ns(text: str) -> list[int]:
    parts = [t for t in text.split(",") if t.strip()]
    if not parts or len(parts) > 64:
        raise InputError(
            f"--n {quote(text)}", expected="1 to 64 comma-separated lengths, e.g. 16,64,256"
        )
    try:
        return [_LENGTH(t) for t in parts]
    except argparse.ArgumentTypeError as err:
        raise InputError(
            f"--n {quote(text)}: {err}", expected="comma-separated positive lengths"
        ) from None


def check_sizes(model, ns: list[int]) -> None:
    """Refuse lengths whose search step would exceed :mod:`attncert.limits`."""
    widths = [
        sum(int(h.w_q.shape[0]) + int(h.w_v.shape[0]) for h in layer.heads)
        for layer in model.layers
    ]
    for n in ns:
        limits.check_sensitivity_size(model.n_tokens(n), model.d, widths, what=f"--n {n}")


def check_plot_path(path: str) -> None:
    """Refuse, before any work, a plot file that cannot be written or has no known format."""
    from attncert.figures import check_figure_path

    check_figure_path(path, "--plot")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sensitivity",
        help="Lemma 5: largest effect of one input symbol vs n, with the bound",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_model_argument(p)
    p.add_argument("--n", default="16,64,256,1024", help="input lengths (default 16,64,256,1024)")
    p.add_argument(
        "--metric",
        choices=("logit", "activation", "probability"),
        default="logit",
        help="what to maximise (default: the readout logit)",
    )
    p.add_argument(
        "--seed", type=integer(minimum=0, maximum=2**63 - 1), default=0, help="search seed"
    )
    p.add_argument(
        "--restarts",
        type=integer(minimum=1, maximum=10_000),
        default=8,
        help="random restarts of the search (default 8)",
    )
    p.add_argument(
        "--time-budget",
        type=seconds,
        default=30.0,
        help="seconds per n for the search (default 30; restarts stop once it is spent)",
    )
    p.add_argument(
        "--norm",
        choices=("certified", "frobenius"),
        default="certified",
        help="operator-norm bound used for the constants",
    )
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="write a log-log plot; the format follows the extension (.png, .pdf, .svg, …)",
    )
    p.add_argument(
        "--certify",
        action="store_true",
        help="also the certified B(n), checked independently, and Theorem 6's floor",
    )
    p.add_argument(
        "--save",
        metavar="PATH",
        help="with --certify: write each certificate (PATH may contain {n})",
    )
    p.add_argument(
        "--uniform",
        action="store_true",
        help="also the length-uniform Lemma 5: K with B(n) ≤ K/n for every n ≥ N0, checked, "
        "beside Lemma 5's published constant, and Theorem 6's floor at every n ≥ N0",
    )
    p.add_argument(
        "--n0",
        type=integer(minimum=2, maximum=10**15),
        default=64,
        help="with --uniform: the least length the statement covers (default 64)",
    )
    p.add_argument(
        "--bins",
        type=integer(minimum=1, maximum=256),
        default=None,
        help="with --uniform: relative-position bins (default: the best of 1, 2, 4, …, 32)",
    )
    p.add_argument(
        "--save-uniform",
        metavar="PATH",
        help="with --uniform: write the uniform certificate (re-check: attncert soft-check)",
    )
    p.add_argument(
        "--samples",
        type=integer(minimum=2, maximum=1_000_000),
        default=1000,
        help="strings sampled for the measured PARITY cross-entropy where 2^n > 65536 "
        "(default 1000; up to 65536 strings every string is used)",
    )
    p.add_argument(
        "--parity-rate",
        action="store_true",
        help="also the PARITY-rate family profile (binary models; docs/parity-rate.md)",
    )
    p.add_argument(
        "--accepts",
        choices=("even", "odd"),
        default=None,
        help="with --parity-rate or --certify: the parity the model accepts (default: read "
        "from the model's meta; assumed even, and said so, when the model does not declare it)",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from attncert.soft.report import format_table, plot_sensitivity, sensitivity_report

    ns = _ns(args.n)
    if args.plot:
        check_plot_path(args.plot)
    _check_certify_args(args, ns)
    model = load_model_arg(args.model)
    check_sizes(model, ns)
    outside = _outside_unbounded(args, model)
    if (args.certify or args.uniform) and outside is None:
        # refused before any work: the certified propagations (per n and length-uniform)
        # know RMSNorm, gated MLPs, SiLU, RoPE and parallel residual, no other new kind
        from attncert.soft.certified.propagate import SUPPORTED

        what = "--uniform (the length-uniform" if args.uniform else "--certify (the certified"
        model.require_classic(f"sensitivity {what} propagation)", SUPPORTED)
    uniform = _uniform(args, model, ns) if args.uniform else None
    report = sensitivity_report(
        model,
        ns,
        metric=args.metric,
        seed=args.seed,
        restarts=args.restarts,
        time_budget=args.time_budget,
        norm=args.norm,
        progress=not args.json,
    )
    if outside is not None:
        return _report_outside(args, report, outside, _save_uniform(args, None, outside))
    rows = _certified(args, model, report) if args.certify else None
    if args.plot:
        plot_sensitivity(report, args.plot, certified=rows)
    rate = _parity_rate(model, ns, args.accepts) if args.parity_rate else None
    u_rows = _uniform_rows(uniform, report) if uniform is not None else None
    verdict = _final_verdict(rows, model, uniform, u_rows, report)
    saved = _save_uniform(args, uniform) if uniform is not None else None
    if args.json:
        out = report.as_dict()
        if rate is not None:
            out["parity_rate"] = rate
        if rows is not None:
            out["certified"] = [r.as_dict() for r in rows]
        if uniform is not None:
            out["uniform"] = dict(uniform.as_dict(), rows=u_rows)
        if verdict is not None:
            out["verdict"] = verdict
        if saved is not None:
            out["save_uniform"] = saved
        print_json(out)
    else:
        print(format_table(report))
        if rows is not None:
            from attncert.soft.certified.table import format_certified

            print()
            print(format_certified(rows))
            if uniform is None:
                print(f"verdict: {verdict}")
        if rate is not None:
            print()
            print(rate["table_text"])
            print(rate["one_layer"]["text"])
        if uniform is not None:
            from attncert.soft.certified.uniform import format_uniform

            measured = {r["n"]: r["measured"] for r in u_rows}
            print()
            print(format_uniform(uniform, ns, measured))
            for r in u_rows:
                if r["sound"] is False:
                    print(
                        f"  REFUTED: at n = {r['n']} the measured change {r['measured']!r} "
                        f"exceeds K/n = {r['K_over_n']}"
                    )
            if saved is not None:
                print(saved["message"])
            print(f"verdict: {verdict}")
        if args.plot:
            print(f"plot written to {args.plot}")
        if args.save and rows is not None:
            print(
                "certificates written: "
                + ", ".join(args.save.replace("{n}", str(r.n)) for r in rows if r.certificate)
            )
    if verdict is None:
        return 0
    return Verdict(verdict).exit_code


def _outside_unbounded(args, model) -> list[str] | None:
    """With --certify/--uniform: the heads whose scores carry a term unbounded in n
    (ALiBi's −m·(i − j)), each in one sentence — Lemma 5 does not apply to such a model,
    whatever its weights; None when there is none (or neither option is given)."""
    from attncert.kernel.core.hypotheses import alibi_outside

    if not (args.certify or args.uniform):
        return None
    found = [
        alibi_outside(li, hi, h.alibi)
        for li, layer in enumerate(model.layers)
        for hi, h in enumerate(layer.heads)
        if h.alibi is not None and h.alibi != 0
    ]
    return found or None


def _save_uniform(args, uniform, outside: list[str] | None = None) -> dict | None:
    """With ``--save-uniform F``: write the uniform certificate to F if there is one, and
    say so — ``{"path", "written", "message"}``, the message "uniform certificate written
    to F" or "no uniform certificate written to F: <reason>" (None without the flag).
    ``outside``: the reasons the model is outside Lemma 5 (then no analysis ran)."""
    path = args.save_uniform
    if not path:
        return None
    if outside is not None:
        why = f"{V.outside(outside).verdict.value}: " + "; ".join(outside)
    elif uniform.certificate is None:
        why = f"{uniform.verdict}: " + "; ".join(uniform.reasons)
    else:
        uniform.save(path)
        rejected = uniform.verdict == Verdict.REFUTED.value
        message = f"uniform certificate written to {path}" + (
            " (the kernel rejected it: REFUTED)" if rejected else ""
        )
        return {"path": path, "written": True, "message": message}
    message = f"no uniform certificate written to {path}: {why}"
    return {"path": path, "written": False, "message": message}


def _report_outside(args, report, reasons: list[str], saved: dict | None = None) -> int:
    """OUTSIDE-THEOREM (exit 5) for a model with an unbounded score term: the measured
    curve, the reason, and no bound (none is claimed: the certified propagations bound
    bounded logits only); with ``--save-uniform``, that no certificate was written."""
    from attncert.soft.report import format_table

    verdict = V.outside(reasons).verdict
    note = (
        "no certified bound is computed: Lemma 5 and Theorem 6 do not apply to this model, "
        "and the measured changes above are measurements, not bounds"
    )
    if args.json:
        out = report.as_dict()
        out["verdict"] = verdict.value
        out["outside_theorem"] = {"reasons": reasons, "note": note}
        if saved is not None:
            out["save_uniform"] = saved
        print_json(out)
    else:
        print(format_table(report))
        print()
        for r in reasons:
            print(f"OUTSIDE-THEOREM: {r}")
        print(f"  {note}")
        if args.plot:
            print(f"plot written to {args.plot}")
        if saved is not None:
            print(saved["message"])
        print(f"verdict: {verdict.value}")
    return verdict.exit_code


def _final_verdict(rows, model, uniform, u_rows, report=None) -> str | None:
    """The per-n verdicts (--certify) and the uniform one (--uniform; REFUTED when arb
    confirms a measured change above K/n), combined by the kernel's section rule
    (:func:`attncert.kernel.verdict.section`: the worst row)."""
    from attncert.kernel.verdict import section

    found = []
    if rows is not None:
        found += [Verdict(v) for v in _row_verdicts(rows, model, report)]
    if uniform is not None:
        found.append(_uniform_verdict(uniform, model, u_rows, report))
    if not found:
        return None
    return section(found)[0].value


def _uniform_verdict(uniform, model, u_rows, report) -> Verdict:
    from attncert.soft.certified.table import exceeded_text

    if report is not None:
        for r, res in zip(u_rows, report.profile.results, strict=True):
            if r["sound"] is False and exceeded_text(
                model, res.witness.x, res.witness.x_prime, uniform.k / r["n"]
            ):
                return V.rejected("a measured change above K/n, confirmed in arb").verdict
    return Verdict(uniform.verdict)


def _uniform(args, model, ns):
    from attncert.soft.certified.uniform import certify_uniform

    source = args.model if args.model.startswith("zoo:") else str(Path(args.model).resolve())
    return certify_uniform(model, args.n0, bins=args.bins, source=source, floor_at=tuple(ns))


def _uniform_rows(uniform, report) -> list[dict]:
    """Per measured n: K/n, min(K/n, Z), the floor, the measured change and whether it is
    ≤ K/n (None below N₀ or without a certificate)."""
    from fractions import Fraction

    from attncert.kernel.uniform.dyadic import approx

    out = []
    for r in report.profile.results:
        b = uniform.bound_at(r.n)
        k_n = None if b is None else uniform.k / r.n
        out.append(
            {
                "n": r.n,
                "K_over_n": None if k_n is None else approx(k_n, 8),
                "bound": None if b is None else approx(b, 8),
                "floor": uniform.floor_at(r.n),
                "measured": float(r.value),
                "sound": None if k_n is None else Fraction(float(r.value)) <= k_n,
            }
        )
    return out


def _check_certify_args(args, ns: list[int]) -> None:
    """Refuse, before any work, options that --certify or --uniform cannot honour."""
    if args.uniform and args.metric != "logit":
        raise InputError(
            "--uniform bounds the change of the logit", expected="--metric logit (the default)"
        )
    if not args.uniform and (args.save_uniform or args.bins is not None):
        raise InputError(
            "--save-uniform and --bins need --uniform", expected="--uniform --save-uniform PATH"
        )
    if args.save_uniform:
        from attncert.io import check_output_path

        check_output_path(args.save_uniform, "--save-uniform")
    if args.save is None:
        if args.certify and args.metric == "activation":
            raise InputError(
                "--certify bounds the logit (and the probability, a quarter of it)",
                expected="--metric logit or probability",
            )
        return
    if not args.certify:
        raise InputError("--save needs --certify", expected="--certify --save PATH")
    if len(ns) > 1 and "{n}" not in args.save:
        raise InputError(
            f"--save {quote(args.save)} with {len(ns)} lengths",
            expected="a path containing {n}, e.g. 'cert-{n}.json'",
        )
    for n in ns:
        path = Path(args.save.replace("{n}", str(n)))
        if path.is_dir():
            raise InputError(f"--save {quote(str(path))} is a directory", expected="a file path")
        for parent in path.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise InputError(f"--save {quote(str(path))}: {parent} is not a directory")
                break
    if args.metric == "activation":
        raise InputError(
            "--certify bounds the logit (and the probability, a quarter of it)",
            expected="--metric logit or probability",
        )


def _certified(args, model, report):
    """The certified rows (attncert.soft.certified.table), saved if asked."""
    from attncert.soft.certified.table import certified_rows
    from attncert.soft.parity_rate import accepted_parity

    even = args.accepts == "even" if args.accepts else accepted_parity(model)[0]
    source = args.model if args.model.startswith("zoo:") else str(Path(args.model).resolve())
    rows = certified_rows(
        model,
        report,
        source=source,
        accepts_even=True if even is None else even,
        samples=args.samples,
        seed=args.seed,
    )
    if args.save:
        for r in rows:
            if r.certificate is not None:
                r.certificate.save(args.save.replace("{n}", str(r.n)))
    return rows


def _row_verdicts(rows, model, report=None) -> list[str]:
    """Each n's verdict, from the kernel (:func:`attncert.soft.certified.table.row_assessment`):
    REFUTED (a checker rejection, or a measured change above the certified bound that arb
    confirms), UNDECIDED (the bound overflowed), OUTSIDE-THEOREM (Lemma 5's hypotheses
    fail), CERTIFIED-TRIVIAL (B(n) only the range cap), CERTIFIED."""
    from attncert.soft.certified.table import row_assessment

    wit = {res.n: res.witness for res in report.profile.results} if report is not None else {}
    return [row_assessment(r, model, wit.get(r.n)).verdict.value for r in rows]


def _verdict(rows, model, report=None) -> str:
    """The per-n verdicts combined by the kernel's section rule (the worst row)."""
    from attncert.kernel.verdict import section

    return section(Verdict(v) for v in _row_verdicts(rows, model, report))[0].value


def _parity_rate(model, ns: list[int], accepts: str | None = None) -> dict:
    """Proposition (PARITY rate) for the CLI: which parity the model accepts (flag, model
    meta, or an announced assumption), the rate table, the status for this depth (one layer
    proved, several a conjecture) and, where it applies, the rigorous one-layer constant."""
    from attncert.errors import ParameterError, UnsupportedError
    from attncert.soft.parity_rate import (
        accepted_parity,
        format_rate_table,
        one_layer_mass_bound,
        rate_table,
        status_for,
    )

    if accepts is not None:
        even, source = accepts == "even", "--accepts"
    else:
        even, source = accepted_parity(model)
        if even is None:
            even, source = True, f"assumed even: {source}; pass --accepts odd for the complement"
    parity = "even" if even else "odd"
    table = rate_table(model, ns, accepts_even=even)
    status = status_for(model)
    try:
        b = one_layer_mass_bound(model)
    except (UnsupportedError, ParameterError) as err:
        one = {"applies": False, "reason": str(err), "text": f"one-layer bound: n/a ({err})"}
    else:
        c = float(b.C)
        one = {
            "applies": True,
            "C": c,
            "rho": float(b.rho),
            "text": f"one-layer bound (rigorous): mass ≤ C/N with C = {c:.6g}, so any "
            "sign-correct model of this shape has margin ≤ C/(4(K−1)N) = O(1/n²)",
        }
    return {
        "accepts": parity,
        "accepts_source": source,
        "status": status,
        "residue": table.residue,
        "rows": [dict(vars(r)) for r in table.rows],
        "margin_exponent": table.margin_exponent,
        "mass_exponent": table.mass_exponent,
        "table_text": f"PARITY rate: accepted parity {parity} ({source})\n"
        f"Proposition status: {status}\n" + format_rate_table(table),
        "one_layer": one,
    }
