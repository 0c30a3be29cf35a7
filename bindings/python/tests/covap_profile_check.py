"""COVAP's interval from a profile: the hook's ratio of communication to computation, on
made-up timings whose answer is known (no process group needed)."""
import sys

from tessera.torch._covap_hook import ccr_from_profile


def steps(n, comp, comm, overlap):
    """n steps of `comp` s of computation each. Two buckets: the first handed over `overlap` s
    before the computation ends, the second at its end; the allreduces run one after the other,
    `comm` s in all, and the next step starts when they end. A span is (step, posted, ended)."""
    spans, t = [], 0.0
    for s in range(n):
        first = t + comp - overlap
        first_end = first + comm / 2
        second = t + comp
        second_end = max(second, first_end) + comm / 2
        spans += [(s, first, first_end), (s, second, second_end)]
        t = second_end
    return spans


failures = []
for comp, comm, overlap in ((0.5, 0.6, 0.2), (0.5, 1.5, 0.3), (1.0, 0.4, 0.4), (0.2, 1.0, 0.1)):
    got = ccr_from_profile(steps(3, comp, comm, overlap))
    if abs(got - comm / comp) > 1e-9 * max(1.0, comm / comp):
        failures.append(f"comp {comp} s, comm {comm} s, overlap {overlap} s: ratio {got:.4f}, want {comm / comp:.4f}")
# Measured over several steps at once, the earlier steps' waits would count as computation:
# the ratio must not depend on how many steps were profiled.
two, six = ccr_from_profile(steps(2, 0.5, 1.5, 0.3)), ccr_from_profile(steps(6, 0.5, 1.5, 0.3))
if abs(two - six) > 1e-9:
    failures.append(f"the ratio changes with the number of steps profiled: {two:.4f} vs {six:.4f}")
# The first step is a warm-up (DDP builds its buckets, the first collectives connect): a slow
# one must not set the interval.
warm = steps(5, 0.5, 0.6, 0.2)
warm[1] = (0, warm[1][1], warm[1][2] + 3.0)
if abs(ccr_from_profile(warm) - 1.2) > 1e-9:
    failures.append(f"a slow first step sets the ratio: {ccr_from_profile(warm):.4f}, want 1.2")
if ccr_from_profile([]) != 0.0:
    failures.append("no profile must give 0")
print("\n".join(failures) or "covap profile: OK")
sys.exit(1 if failures else 0)
