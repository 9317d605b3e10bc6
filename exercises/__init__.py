"""Your work: the stubs you fill in, lesson by lesson.

Each `raise NotImplementedError("task L.N: ...")` marks code for you to write;
the docstring above it says what it must do, and `pytest autograder --task L.N`
grades it. Generated from `solutions/` by `python -m autograder dev sync`.
"""
