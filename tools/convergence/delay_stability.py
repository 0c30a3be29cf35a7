#!/usr/bin/python3
"""How far SGD with heavy-ball momentum can step when its gradient arrives late.

On a quadratic of curvature h, SGD with momentum mu and learning rate eta whose gradient is
computed d steps before it is applied follows
    x[t+1] = x[t] + mu (x[t] - x[t-1]) - eta h x[t-d],
which converges only while every root of z^(d+1) - (1+mu) z^d + mu z^(d-1) + eta h (d >= 1;
z^2 - (1+mu-eta h) z + mu for d = 0) lies inside the unit circle. This prints the largest
stable eta h, found by bisection on the roots' largest modulus, and the same bound in terms of
the effective step eta / (1 - mu) that momentum takes in the steady state. It is why filtering
schemes that send a gradient late (COVAP's error feedback, or the exact average one step late)
cost accuracy under momentum 0.9 (docs/convergence.md, "Why late gradients cost so much"):

  /usr/bin/python3 tools/convergence/delay_stability.py
  /usr/bin/python3 tools/convergence/delay_stability.py --momenta 0.9 --delays 0,1,2,3
"""
import argparse

import numpy as np


def spectral_radius(eta_h, mu, delay):
    """Largest modulus among the characteristic roots of the delayed heavy-ball recursion."""
    if delay == 0:
        coefficients = [1.0, -(1.0 + mu - eta_h), mu]
    else:
        coefficients = np.zeros(delay + 2)
        coefficients[0], coefficients[1] = 1.0, -(1.0 + mu)
        coefficients[2] += mu
        coefficients[-1] += eta_h
    return float(max(abs(np.roots(coefficients))))


def largest_stable_step(mu, delay, iterations=60):
    """The largest eta h for which the recursion converges (bisection; the stable set is an
    interval starting at 0 for these recursions)."""
    low, high = 0.0, 8.0
    for _ in range(iterations):
        mid = (low + high) / 2
        if spectral_radius(mid, mu, delay) < 1.0:
            low = mid
        else:
            high = mid
    return low


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--momenta", default="0.9,0.5,0")
    ap.add_argument("--delays", default="0,1,2")
    args = ap.parse_args()
    try:
        momenta = [float(m) for m in args.momenta.split(",")]
        delays = [int(d) for d in args.delays.split(",")]
    except ValueError:
        ap.error(f"--momenta {args.momenta} --delays {args.delays}: comma-separated numbers (delays integers)")
    for mu in momenta:
        if not 0 <= mu < 1:
            ap.error(f"--momenta: {mu:g} is not in [0, 1)")
    for delay in delays:
        if delay < 0:
            ap.error(f"--delays: {delay} is negative")
    print("| momentum | delay (steps) | largest stable eta h | as eta/(1-mu) h |")
    print("| --- | --- | --- | --- |")
    for mu in momenta:
        for delay in delays:
            bound = largest_stable_step(mu, delay)
            print(f"| {mu:g} | {delay} | {bound:.3f} | {bound / (1 - mu):.2f} |")


if __name__ == "__main__":
    main()
