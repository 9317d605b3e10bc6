"""The course's lessons and tasks: titles, pages and hints, in one place.

Task ids are `L.N` (lesson L, task N) and are spelled the same in the solution
markers, the stubs' TODOs and errors, the page headings, the test markers and
the scorecard. Which file and which functions a task lives in is not written
here: `autograder.regions` reads it from the solution markers.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Task:
    id: str
    title: str
    hints: tuple[str, ...]
    # a capstone has no code of its own: it runs these files of the learner's whole, with no reference underneath,
    # once every task in them passes
    runs_whole: tuple[str, ...] = ()

    @property
    def lesson(self) -> int:
        return int(self.id.split(".")[0])

    @property
    def anchor(self) -> str:
        """The id of the task's heading on its page, e.g. `task-2-3`."""
        return "task-" + self.id.replace(".", "-")

    @property
    def bonus(self) -> bool:
        """A bonus task is scored apart and never needed for full marks; its lesson says so."""
        return LESSON_OF[self.id].bonus


@dataclass(frozen=True)
class Lesson:
    number: int
    slug: str
    title: str
    tasks: tuple[Task, ...] = field(default=())
    bonus: bool = False  # every task of the lesson is a bonus task

    @property
    def page(self) -> str:
        """The page's source file, relative to the repository root."""
        return f"course/{self.slug}.md"


def _lesson(number: int, slug: str, title: str, *tasks: tuple, bonus: bool = False) -> Lesson:
    made = tuple(Task(t[0], t[1], tuple(t[2]), tuple(t[3]) if len(t) > 3 else ()) for t in tasks)
    return Lesson(number, f"{number:02d}-{slug}", title, made, bonus)


LESSONS: tuple[Lesson, ...] = (
    _lesson(0, "welcome", "Welcome and set-up"),
    _lesson(
        1,
        "derivatives",
        "Derivatives from first principles",
        (
            "1.1",
            "forward_difference",
            [
                "The slope is rise over run: how much fn changes, divided by how far x moved.",
                "Evaluate fn at x and at x + h; return the difference divided by h.",
                "A step h that is zero or negative has no meaning here: raise ValueError with a message that says so.",
            ],
        ),
        (
            "1.2",
            "central_difference",
            [
                "Step the same distance h to both sides of x.",
                "The rise is fn one step right of x minus fn one step left of it; the run between those points is 2h.",
                "Refuse h <= 0 with a ValueError, as in task 1.1.",
            ],
        ),
        (
            "1.3",
            "partial_derivative",
            [
                "Nudge one argument only; every other argument keeps its value.",
                "Nudge element i of a copy of args by h; the slope compares fn on the copy with fn on the original.",
                "Check h > 0 (ValueError) and that i names an argument (IndexError).",
            ],
        ),
    ),
    _lesson(
        2,
        "value",
        "A number that remembers: the Value object",
        (
            "2.1",
            "Value.__init__",
            [
                "Store every argument on self; `grad` always starts at 0.0.",
                "`_prev` is a set made from the tuple `_children`, so a child used twice is stored once.",
                "`_backward` starts as a function that takes no arguments and does nothing: a leaf has nothing to "
                "pass on.",
            ],
        ),
        (
            "2.2",
            "Value.__repr__",
            [
                "Return a string; Python prints it for the Value in the REPL.",
                "An f-string does it: the class name, then `(data=...)` with the number.",
            ],
        ),
        (
            "2.3",
            "Value.__add__ forward",
            [
                "The result is a new Value; neither input changes.",
                "Its data is the sum of the two `.data`; its children are `(self, other)`; its op is '+'.",
                "`other` may be a plain number (`a + 4.0`): when it is not a Value, make it one "
                "before reading `.data`.",
            ],
        ),
        (
            "2.4",
            "Value.__mul__ forward",
            [
                "Same shape as `__add__`, with a product and the op '*'.",
                "Wrap a plain number first, exactly as in task 2.3.",
            ],
        ),
    ),
    _lesson(
        3,
        "graph",
        "Seeing the graph",
        (
            "3.1",
            "trace",
            [
                "Walk from the root through `_prev` and collect every Value you reach.",
                "Record an edge (child, parent) for each child of each node you visit.",
                "Keep a set of visited nodes so a Value used twice is visited once.",
            ],
        ),
        (
            "3.2",
            "draw_dot",
            [
                "A `Digraph` laid out left to right (graph attribute `rankdir` 'LR'); `trace(root)` lists what to "
                "draw.",
                "One `shape='record'` node per Value named `str(id(v))`, label `{ label | data %.4f | grad %.4f }`.",
                "Each `_op` gets a node `str(id(v)) + v._op` that points to its Value; "
                "the children point to the op node.",
            ],
        ),
    ),
    _lesson(
        4,
        "backprop-by-hand",
        "Backpropagation by hand",
        (
            "4.1",
            "numerical_gradient",
            [
                "Evaluate the expression twice: with the inputs as given, and with one leaf nudged by h.",
                "The expression may return a Value or a number: compare `.data` when there is one.",
                "An unknown leaf name is a KeyError that lists the known names.",
            ],
        ),
        (
            "4.2",
            "hand_gradients",
            [
                "Start at the output: dL/dL = 1. L = d·f, so dL/dd = f and dL/df = d.",
                "A '+' node passes its gradient unchanged to both inputs: dL/dc = dL/de = dL/dd.",
                "A '*' node sends each input the other input's value times the gradient: dL/da = b · dL/de.",
            ],
        ),
        (
            "4.3",
            "ascent_step",
            [
                "Each leaf's `.grad` says which way its `.data` should move to make L grow.",
                "Move every leaf's `.data` by `step_size` times its own `.grad`, the way the grad points (ascent).",
            ],
        ),
    ),
    _lesson(
        5,
        "chain-rule",
        "The chain rule and a neuron",
        (
            "5.1",
            "Value.tanh",
            [
                "Forward: `math.tanh(self.data)`, one child, op 'tanh'.",
                "The local derivative of tanh(x) is 1 - tanh(x)²: reuse the forward result.",
                "In `_backward`, the chain rule: `self`'s gradient is that local derivative times `out.grad`.",
            ],
        ),
        (
            "5.2",
            "Value.__add__ backward",
            [
                "The local derivative of a + b is 1 for both a and b.",
                "Chain rule: each child receives 1 × out.grad.",
            ],
        ),
        (
            "5.3",
            "Value.__mul__ backward",
            [
                "The local derivative of a·b is b with respect to a, and a with respect to b.",
                "Chain rule: each input's grad receives the *other* input's data times `out.grad`.",
            ],
        ),
    ),
    _lesson(
        6,
        "backward",
        "Backward, automatically",
        (
            "6.1",
            "Value.backward",
            [
                "Order the nodes so that every node comes after all of its children (a topological order).",
                "Seed `self.grad` with dL/dL = 1, then call each node's `_backward` in that order "
                "reversed, last first.",
                "Mark nodes as visited so each `_backward` runs exactly once, even in a diamond.",
            ],
        ),
        (
            "6.2",
            "Value.backward without recursion",
            [
                "A recursive depth-first search uses one Python frame per level: about 1,000 levels and it stops.",
                "Do the same search with your own list as a stack instead of the call stack.",
                "Each node goes on the stack twice: first to push its children, "
                "then, marked, to be appended after them.",
            ],
        ),
    ),
    _lesson(
        7,
        "accumulation",
        "The accumulation bug",
        (
            "7.1",
            "a Value used twice",
            [
                "`b = a + a`: both of b's inputs are a, so a must receive two contributions.",
                "In every `_backward`, add to the children's grad (`+=`) instead of assigning it (`=`).",
                "Check `__add__`, `__mul__` and `tanh`: all three closures.",
            ],
        ),
    ),
    _lesson(
        8,
        "operations",
        "A full set of operations",
        (
            "8.1",
            "Value.__radd__ and __rmul__",
            [
                "`1 + a` asks int first; when int gives up, Python calls `a.__radd__(1)`.",
                "Addition and multiplication commute: hand the work to the `__add__` and `__mul__` you already have.",
            ],
        ),
        (
            "8.2",
            "Value.__pow__",
            [
                "Refuse anything but an int or float exponent with a TypeError.",
                "Forward: the data raised to `other`, one child, and an op that names the exponent ('**2').",
                "Power rule: d(xⁿ)/dx = n·xⁿ⁻¹ at `self.data`; in `_backward`, add it times `out.grad` to `self.grad`.",
            ],
        ),
        (
            "8.3",
            "Value.__neg__, __sub__ and __rsub__",
            [
                "Build each from operations you already have, so their backward comes for free.",
                "Negation is a product with -1; subtraction adds the negation, whichever side the plain number is on.",
            ],
        ),
        (
            "8.4",
            "Value.__truediv__ and __rtruediv__",
            [
                "Division is multiplication by a power: a / b = a · b⁻¹.",
                "Raise the divisor to the power -1 and multiply; in `10.0 / a` the Value is the divisor: roles swap.",
            ],
        ),
        (
            "8.5",
            "Value.exp",
            [
                "Forward: `math.exp(self.data)`, op 'exp'.",
                "The derivative of eˣ is eˣ: the output's own data.",
            ],
        ),
        (
            "8.6",
            "Value.relu",
            [
                "Forward: 0 for a negative input, the input itself otherwise; op 'ReLU'.",
                "Backward: the gradient passes only where the output is positive (not at exactly 0).",
            ],
        ),
    ),
    _lesson(
        9,
        "pytorch",
        "Checking against PyTorch",
        (
            "9.1",
            "torch_neuron",
            [
                "Make each input a float64 scalar tensor (`dtype=torch.double`) that requires its grad.",
                "Build n the same way as with Value, take `torch.tanh(n)`, call `.backward()` on it.",
                "Read `.item()` of the output and of each leaf's `.grad`.",
            ],
        ),
        (
            "9.2",
            "Tanh autograd Function",
            [
                "forward(ctx, x) computes tanh of x and keeps the result for backward with `ctx.save_for_backward`.",
                "backward(ctx, grad_output) gets that result back from `ctx.saved_tensors`, a tuple.",
                "Return tanh's local derivative, written with the saved t, times the incoming `grad_output`.",
            ],
        ),
    ),
    _lesson(
        10,
        "nn",
        "A neural network library",
        (
            "10.1",
            "Module",
            [
                "A bare Module has no parameters: return an empty list.",
                "zero_grad walks `self.parameters()` and sets each `grad` to 0.0; subclasses inherit it.",
            ],
        ),
        (
            "10.2",
            "Neuron",
            [
                "Draw the nin weights first, then the bias, each `Value(random.uniform(-1, 1))`.",
                "The sum w·x + b: start from the bias and add each `wi * xi`.",
                "`self.act` names a method of Value: look it up on z (`getattr`) "
                "and call it, unless `nonlin` is False.",
            ],
        ),
        (
            "10.3",
            "Layer",
            [
                "A layer is a list of `nout` neurons, each with `nin` inputs; pass the keyword arguments on.",
                "Call every neuron on the same x; return the single Value when there is only one neuron.",
                "parameters(): every neuron's parameters, flattened in order.",
            ],
        ),
        (
            "10.4",
            "MLP",
            [
                "Put nin in front of nouts: layer i maps the i-th size to the next one.",
                "With `linear_output=True`, only the last layer gets `nonlin=False`.",
                "Call the layers one after the other, each on the previous one's output.",
            ],
        ),
    ),
    _lesson(
        11,
        "training",
        "Loss and gradient descent",
        (
            "11.1",
            "squared_error_loss",
            [
                "For each example, (prediction - target) ** 2.",
                "Add them up into one Value: give `sum` a Value to start from, so the total stays in the graph.",
            ],
        ),
        (
            "11.2",
            "sgd_step",
            [
                "Gradient descent moves each `p.data` against its gradient, by `learning_rate` times `p.grad`.",
                "Change `.data` only: the gradients are zeroed by the training loop, not here.",
            ],
        ),
        (
            "11.3",
            "train",
            [
                "Each step: predictions for every example, the loss, `zero_grad`, `backward`, `sgd_step`.",
                "Zero the gradients every step, before backward: otherwise they pile up from step to step.",
                "Record `loss.data` (a float) for each step and return the list.",
            ],
        ),
    ),
    _lesson(
        12,
        "classifier",
        "A real classifier",
        (
            "12.1",
            "hinge_loss",
            [
                "For one example the loss is relu(1 - y · score): zero once the score is right by a margin of 1.",
                "Average over the examples: sum, then multiply by 1 / n.",
            ],
        ),
        (
            "12.2",
            "l2_penalty",
            [
                "Square every parameter (p * p) and add them up into one Value.",
                "Multiply the sum by alpha.",
            ],
        ),
        (
            "12.3",
            "accuracy",
            [
                "An example is right when its score has the sign of its label.",
                "Count the right ones and divide by the number of examples; a score of exactly 0 is never right.",
            ],
        ),
        (
            "12.4",
            "train_step and train_classifier",
            [
                "train_step: scores, total loss = hinge_loss + l2_penalty, zero_grad, backward, update; return floats.",
                "train_classifier calls train_step once per step with the learning rate 1.0 - 0.9 * k / steps.",
                "With batch_size, draw indices with one random.Random(seed)'s sample; "
                "keep each step's (loss, accuracy).",
            ],
        ),
        (
            "12.5",
            "your engine, whole",
            [
                "Nothing new to write: this check runs your engine.py and nn.py with no reference underneath.",
                "It waits until every task of lessons 2 and 5 to 8 and 10 passes; "
                "a bug it finds then hides between them.",
                "Read which expression or step disagrees, then re-run the task whose rule it uses on its own.",
            ],
            ("engine", "nn"),
        ),
    ),
    _lesson(
        13,
        "further",
        "From micrograd to PyTorch, and further",
        (
            "13.1",
            "sigmoid and log",
            [
                "Each is a one-input operation shaped like `Value.exp`: a forward number, a new Value with child `v`, "
                "and a `_backward` that adds the local derivative times `out.grad` to `v.grad`.",
                "σ'(x) = σ(x)·(1 - σ(x)): keep the forward result and reuse it. The derivative of log x is 1/x.",
                "For a very negative x, e^-x overflows: there compute σ from e^x, the equal form. In log, refuse "
                "`v.data <= 0` before calling `math.log`.",
            ],
        ),
        (
            "13.2",
            "softmax and cross_entropy",
            [
                "Build both from Value operations you already have (`-`, `.exp()`, `+`, `/`, `log`): "
                "their backward comes for free.",
                "Softmax does not change when the same number is subtracted from every logit: subtract the largest "
                "logit's `.data`, so that every exponent is at most 0.",
                "For the loss, never take the log of a probability, which can round to 0: expand "
                "log(e^(sₜ - m) / Σⱼ e^(sⱼ - m)) by hand; the sum left inside the log is at least 1.",
            ],
        ),
        (
            "13.3",
            "Momentum",
            [
                "Keep one velocity per parameter, in a list as long as the parameters, each starting at 0.0.",
                "step(): first the new velocity, from the old one and the parameter's grad; then move the "
                "parameter's data by that velocity.",
                "zero_grad() clears the grads only: the velocities are the optimizer's memory from step to step.",
            ],
        ),
        bonus=True,
    ),
    _lesson(
        14,
        "tensors",
        "From scalars to tensors",
        (
            "14.1",
            "unbroadcast",
            [
                "A number that broadcasting repeated was used once per copy: what do the copies' gradients add up to?",
                "Two kinds of stretched axes: axes put in front of a shorter shape, and axes of length 1 that were "
                "repeated.",
                "Sum over the leading extra axes until the number of axes matches, then over every axis where "
                "`shape` has 1, keeping that axis (`keepdims=True`).",
            ],
        ),
        (
            "14.2",
            "Tensor.__add__ and __mul__",
            [
                "The forward pass is NumPy's own `+` and `*` on the two `.data` arrays; wrap a plain number or "
                "array as a Tensor first.",
                "The local rules are lesson 5's, element by element: `+` passes `out.grad` on, `*` multiplies it "
                "by the other input's data.",
                "What arrives may have the output's shape, not the input's: pass it through `unbroadcast` with "
                "the input's shape before adding it (`+=`).",
            ],
        ),
        (
            "14.3",
            "Tensor.__matmul__",
            [
                "Forward: `self.data @ other.data`, children `(self, other)`, op '@'.",
                "Each output element is a sum of products: apply the product rule and the sum rule to one "
                "input element, then collect all of them.",
                "The gradient of an input has that input's shape: find the product of `out.grad` with the other "
                "input (transposed) whose shape fits, and add it (`+=`).",
            ],
        ),
        (
            "14.4",
            "Tensor.tanh and Tensor.sum",
            [
                "tanh works element by element: lesson 5's rule, with NumPy's `np.tanh` on the whole array.",
                "sum has one output number that every element feeds with weight 1.",
                "In sum's `_backward`, every element of `self.grad` receives the same single number, `out.grad`.",
            ],
        ),
        (
            "14.5",
            "Tensor.backward",
            [
                "The graph of Tensors is a graph like any other: the sweep of task 6.2 works unchanged.",
                "Only the seed changes: dL/dL is 1 for every element of the output, an array of ones of its shape.",
            ],
        ),
        (
            "14.6",
            "TensorMLP, its loss and its training",
            [
                "A layer of lesson 10 applied to a whole batch at once is one matrix product, one broadcast bias "
                "row and one tanh.",
                "The loss: the difference with the targets as a column (n, 1), multiplied by itself, summed.",
                "The loop is lesson 11's: forward, loss, zero_grad, backward, update each parameter's data; "
                "record the loss as a float.",
            ],
        ),
        bonus=True,
    ),
)

TASKS: dict[str, Task] = {t.id: t for lesson in LESSONS for t in lesson.tasks}
LESSON_OF: dict[str, Lesson] = {t.id: lesson for lesson in LESSONS for t in lesson.tasks}


def lesson(number: int) -> Lesson:
    for candidate in LESSONS:
        if candidate.number == number:
            return candidate
    raise KeyError(f"there is no lesson {number}; lessons are 0 to {LESSONS[-1].number}")


def task(task_id: str) -> Task:
    try:
        return TASKS[task_id]
    except KeyError:
        raise KeyError(
            f"there is no task {task_id!r}; tasks look like 2.3 (see `python -m autograder tasks`)"
        ) from None


def sort_key(task_id: str) -> tuple[int, int]:
    lesson_number, number = task_id.split(".")
    return int(lesson_number), int(number)


# What a task's checks run through in its own lesson (or a later one), besides the lessons before it: the reference
# of these tasks sits under the learner's code in the task's worker, so that a bug there is not charged twice.
# `tests/test_prerequisites.py` grades each task over these alone.
NEEDS: dict[str, tuple[str, ...]] = {
    "2.2": ("2.1",),  # every check makes Values
    "2.3": ("2.1",),
    "2.4": ("2.1", "2.3"),
    "3.1": ("5.1",),  # the graphs drawn show grads: the checks' sweep runs each node's _backward
    "3.2": ("3.1", "5.1", "5.2", "5.3"),
    "4.3": ("5.2", "5.3"),
    "5.1": ("5.2", "5.3"),  # a neuron's backward runs through all three rules
    "5.2": ("5.1", "5.3"),
    "5.3": ("5.1", "5.2"),
    # lesson 8's checks build expressions that mix all of its operations; none of them can stand in for another
    **{f"8.{n}": tuple(f"8.{m}" for m in range(1, 7) if m != n) for n in range(1, 7)},
    "10.3": ("10.1", "10.2"),  # a Layer is made of Neurons, an MLP of Layers
    "10.4": ("10.1", "10.2", "10.3"),
    "11.3": ("11.1", "11.2"),  # the loop computes the loss and takes the steps
    "12.4": ("12.1", "12.2", "12.3"),
    "13.2": ("13.1",),  # cross_entropy takes a log
    "14.2": ("14.1",),  # + and * with broadcasting sum their gradients back with unbroadcast
    "14.6": ("14.1", "14.2", "14.3", "14.4", "14.5"),  # the network is made of the lesson's Tensor
}


def prerequisites(task_id: str) -> frozenset[str]:
    """The tasks whose reference code a task's worker holds: every task of the earlier lessons that are not
    bonus lessons, and the ones `NEEDS` names. No other reference code is in reach of the task's code: any other
    task's code it calls is the learner's own (three functions calling each other in a circle recurse forever).
    """
    number = LESSON_OF[task_id].number
    earlier = {t.id for lesson in LESSONS if lesson.number < number and not lesson.bonus for t in lesson.tasks}
    return frozenset(earlier | set(NEEDS.get(task_id, ())))
