"""Your work: the stubs you fill in, lesson by lesson.

Each `raise NotImplementedError("task L.N: ...")` marks code for you to write;
the docstring above it says what it must do, and `pytest autograder --task L.N`
grades it; `python -m autograder reset L.N` puts a task's stub back.
"""
