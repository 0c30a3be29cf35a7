#!/usr/bin/python3
"""delay_stability.py against the closed forms: no delay 2 (1 + mu) (heavy ball's classical
bound), one step 1 - mu (the product of the two roots, mu + eta h, reaches 1 first), and plain
SGD two steps late (sqrt(5) - 1) / 2."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from delay_stability import largest_stable_step, spectral_radius  # noqa: E402

failures = []


def expect(name, got, want):
    if abs(got - want) > 1e-6:
        failures.append(f"{name}: {got:.9f}, expected {want:.9f}")


for mu in (0.0, 0.5, 0.9, 0.99):
    expect(f"mu {mu} delay 0", largest_stable_step(mu, 0), 2 * (1 + mu))
    expect(f"mu {mu} delay 1", largest_stable_step(mu, 1), 1 - mu)
expect("mu 0 delay 2", largest_stable_step(0.0, 2), (math.sqrt(5) - 1) / 2)
# Longer delays only narrow the range, and a point past the bound is unstable.
for mu in (0.0, 0.9):
    bounds = [largest_stable_step(mu, d) for d in range(5)]
    if any(b2 >= b1 for b1, b2 in zip(bounds, bounds[1:])):
        failures.append(f"mu {mu}: bounds do not shrink with the delay: {bounds}")
    if spectral_radius(bounds[1] * 1.05, mu, 1) <= 1.0:
        failures.append(f"mu {mu}: 5% past the one-step bound is still stable")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("delay stability bounds match their closed forms")
