"""Timing of the theory half of icllib (prints; not a test).

Goals: a whole closed-form trajectory (1000 time points, d = 8) in < 1 ms; an ODE
trajectory of each flow (1000 time points, d = 8, from a small balanced start until every
mode has converged) in < 50 ms.  Also shows why flows.py integrates with LSODA and the
analytic Jacobian: an explicit DOP853 run at the same tolerances is slower and less accurate
once the fast modes have converged (stiffness ratio (s_max/s_min)^2 = 256 here).

Run:  python bench/bench_theory.py   (wall-clock best and median of several repeats, and the
best process CPU time, which is what the goals are checked against: on a shared machine the
wall clock also counts other people's work).
"""

import time

import numpy as np
from scipy.integrate import solve_ivp

from icllib import flows as fl
from icllib import theory as th


def timeit(f, repeat=7, number=1):
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(number):
            f()
        wall.append((time.perf_counter() - t0) / number)
        cpu.append((time.process_time() - c0) / number)
    return min(wall), float(np.median(wall)), min(cpu)


def report(name, f, goal_ms, repeat=7, number=1):
    best, med, cpu = timeit(f, repeat, number)
    ok = "ok" if cpu * 1e3 < goal_ms else "over goal"
    print(f"{name:<40s} wall best {best * 1e3:7.2f} ms, median {med * 1e3:7.2f} ms; "
          f"CPU best {cpu * 1e3:7.2f} ms (goal < {goal_ms:g} ms: {ok})")


def main():
    d, N, eta = 8, 10, 1.0
    s = np.geomspace(4.0, 0.25, d)
    a0 = 1e-6
    k = th.s_inf(s, N)
    T_end = 2.5 * th.escape_time(a0, s, N, eta).max()
    t = np.linspace(0.0, T_end, 1000)
    p0 = q0 = np.full(d, np.sqrt(a0))
    print(f"d = {d}, N = {N}, eta = {eta}, s = {np.round(s, 3)}, 1000 points on "
          f"[0, {T_end:.0f}] SGD steps\n")

    print("closed forms")
    report("logistic_a", lambda: th.logistic_a(t, a0, s, N, eta), 1, number=50)
    C = np.linspace(-0.5, 0.5, d)
    report("unbalanced_a", lambda: th.unbalanced_a(t, a0, C, s, N, eta), 1, number=50)
    a = th.logistic_a(t, a0, s, N, eta)
    report("logistic_a + paper_loss", lambda: th.paper_loss(
        th.logistic_a(t, a0, s, N, eta), s, N), 1, number=50)
    report("exact_loss on a (1000, 8) trajectory",
           lambda: th.exact_loss(np.sqrt(a), np.sqrt(a), s, N), 1, number=50)
    report("escape_time + half_rise_time", lambda: (th.escape_time(a0, s, N, eta),
                                                   th.half_rise_time(a0, s, N, eta)),
           1, number=50)

    print("\nODE flows (solve_ivp, LSODA, analytic Jacobian, rtol 1e-11, atol 1e-14)")
    report("decoupled_flow", lambda: fl.decoupled_flow(t, p0, q0, s, N, eta=eta), 50)
    report("exact_mean_flow", lambda: fl.exact_mean_flow(t, p0, q0, s, N, eta=eta), 50)
    sol = fl.decoupled_flow(t, p0, q0, s, N, eta=eta)
    err = np.max(np.abs(sol.a - a) / a)
    print(f"decoupled_flow vs logistic_a: max relative error {err:.2e}")
    ex = fl.exact_mean_flow(t, p0, q0, s, N, eta=eta)
    a_star = th.exact_fixed_point(s, N)
    print(f"exact_mean_flow at t = {T_end:.0f}: a / a* = {np.round(ex.a[-1] / a_star, 3)}"
          "\n  (the coupling slows the late modes: the smallest has not escaped yet)")

    print("\nfor comparison: explicit DOP853 on the decoupled flow, same tolerances")
    inv_tau = eta * s**2

    def rhs(_, y):
        p, q = y[:d], y[d:]
        f = inv_tau * (1 - p * q * k)
        return np.concatenate([q * f, p * f])

    def dop():
        return solve_ivp(rhs, (0, T_end), np.concatenate([p0, q0]), t_eval=t,
                         method="DOP853", rtol=1e-11, atol=1e-14)

    report("DOP853", dop, 50, repeat=3)
    y = dop().y
    err = np.max(np.abs(y[:d].T * y[d:].T - a) / a)
    print(f"DOP853 vs logistic_a: max relative error {err:.2e}")


if __name__ == "__main__":
    main()
