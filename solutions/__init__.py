"""The reference implementation of the course: the single source of every exercise.

Each file here is complete and readable. The parts a learner writes sit between
`### BEGIN SOLUTION (task L.N)` and `### END SOLUTION`; `python -m autograder sync`
turns them into the stubs of `exercises/`.
"""
