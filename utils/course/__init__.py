"""Course tooling around the lessons: exercises (each lesson's checked exercises), grade (the instructor's
grader, `python -m utils.course.grade`), lessons (the lesson list of this checkout), links (where the
collection lives online: Colab, Binder, the release) and kernel_client (runs a notebook in a fresh kernel).
"""
