"""The untrusted side of the trust boundary: everything that runs in a worker process, next to learner code.

- `main`: the worker's loop, the zygote that forks workers, the spawned worker's entry;
- `loading`: the learner's code for one task over the reference code of the other tasks;
- `sandbox`: how a worker is shut in before it runs learner code (the isolation levels);
- `scenario`: the helpers that scenarios (the grader's code run over the learner's) may use;
- `wire`: the frames of plain data that cross the boundary, the one module the trusted side imports too.

Nothing in this package imports the rest of `autograder`: a worker holds none of the
grader's judgements, expected values or state.
"""
