"""The project's own test suite: the grader, the generator, the reference and the site."""
