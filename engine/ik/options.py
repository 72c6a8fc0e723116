"""The solver settings, in one place: what each is, its Genesis default, its range, its label.

:data:`SETTINGS` lists every setting of an IK solve that is not a target, a task or a start (the
iteration count, the restarts, the tolerances, the kernel, collision avoidance...).
:class:`SolverOptions` holds one set of values, validated and frozen; the IK calls build one from
their keywords (:meth:`SolverOptions.from_keywords`). Everything else that names solver settings
reads this table, so a new setting added here reaches all of them:

- the Genesis calls' keywords (a test checks their defaults against :data:`SETTINGS`);
- scene files' ``solver:`` section (:class:`engine.scenefile.SolverSpec` is made from the table);
- ``ikstudio solve``'s flags (``--max-samples``, ``--kernel``, ``--avoid-collisions`` ...);
- the app's solver panel (the settings marked ``panel``).

Imports nothing of the engine but its argument checks (:mod:`engine.inputs`) and the kernel names.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from .. import inputs
from ..errors import InvalidTypeError, InvalidValueError
from ..runtime.dispatch import KERNELS


@dataclass(frozen=True)
class Setting:
    """One solver setting.

    ``kind``: "int", "float", "bool" or "choice" (one of ``choices``); ``default``: Genesis' (and
    the engine's) default; ``low`` / ``high``: the accepted range (``low_open``: ``low`` itself
    refused; no ``high``: what the kernels hold, int32 or the float type); ``label`` / ``unit``:
    short names for a GUI; ``panel``: whether the app's solver panel shows it (as a number field
    within ``ui_range``, a checkbox or a list); ``help``: one line for ``--help`` and the docs.
    """

    name: str
    kind: str
    default: object
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] = ()
    label: str = ""
    unit: str = ""
    panel: bool = True
    ui_range: tuple[float, float] | None = None

    @property
    def flag(self) -> str:
        """The command-line flag: ``max_samples`` -> ``--max-samples``."""
        return "--" + self.name.replace("_", "-")

    def check(self, value, label: str | None = None):
        """``value`` as this setting's type, or an error naming ``label`` (default the name)."""
        name = label or self.name
        if self.kind == "bool":
            return inputs.as_flag(name, value)
        if self.kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise InvalidValueError(f"{name}: expected one of {', '.join(map(repr, self.choices))}, got {value!r}")
            return value
        low = self.low or 0.0  # every numeric setting is >= 0
        positive = low > 0 or self.low_open
        x = inputs.as_positive(name, value, integer=self.kind == "int", allow_zero=not positive, maximum=self.high)
        if x < low or (self.low_open and x == low):
            raise InvalidValueError(f"{name}: expected {'more than' if self.low_open else 'at least'} {low:g}, "
                                    f"got {value!r}")
        return x


SETTINGS: tuple[Setting, ...] = (
    Setting("max_samples", "int", 50, "random restarts per env (the first starts from the current qpos)",
            low=1, label="restarts", ui_range=(1, 200)),
    Setting("max_solver_iters", "int", 20, "damped least-squares iterations per restart",
            low=0, label="iterations", ui_range=(0, 200)),
    Setting("damping", "float", 0.01, "damping of the least-squares steps",
            low=0, low_open=True, label="damping", ui_range=(1e-6, 10.0)),
    Setting("pos_tol", "float", 5e-4, "position tolerance of success", low=0, low_open=True,
            label="pos tol", unit="m", ui_range=(1e-6, 0.1)),
    Setting("rot_tol", "float", 5e-3, "rotation tolerance of success", low=0, low_open=True,
            label="rot tol", unit="rad", ui_range=(1e-6, 0.5)),
    Setting("max_step_size", "float", 0.5, "largest joint step per iteration", low=0, low_open=True,
            label="max step", unit="rad", ui_range=(1e-3, 3.0)),
    Setting("rest_weight", "float", 0.0, "pull toward the rest (default) configuration; 0: none",
            low=0, label="posture weight", ui_range=(0.0, 2.0)),
    Setting("respect_joint_limit", "bool", True, "keep every joint within its limits", label="joint limits"),
    Setting("kernel", "choice", "auto", "compiled solver: 'auto' (the per-robot one where the robot qualifies), "
            "'per_robot' or 'generic' (compiled once for every robot)", choices=KERNELS, label="kernel"),
    Setting("avoid_collisions", "bool", False, "answers keep the robot's link pairs and the scene's obstacles "
            "collision_margin apart, and success requires it", label="avoid collisions",
            panel=False),  # in the app's Collisions section, beside the obstacles
    Setting("collision_margin", "float", 0.0, "clearance that collision avoidance keeps", low=0,
            label="margin", unit="m", panel=False),
)
BY_NAME = {s.name: s for s in SETTINGS}


@dataclass(frozen=True)
class SolverOptions:
    """One validated, frozen set of solver settings (:data:`SETTINGS`; defaults Genesis').
    Hashable: the IK calls keep their compiled plans by it."""

    max_samples: int = 50
    max_solver_iters: int = 20
    damping: float = 0.01
    pos_tol: float = 5e-4
    rot_tol: float = 5e-3
    max_step_size: float = 0.5
    rest_weight: float = 0.0
    respect_joint_limit: bool = True
    kernel: str = "auto"
    avoid_collisions: bool = False
    collision_margin: float = 0.0

    def __post_init__(self):
        for f in fields(self):  # frozen: checked values are set through object.__setattr__
            object.__setattr__(self, f.name, BY_NAME[f.name].check(getattr(self, f.name)))

    @classmethod
    def from_keywords(cls, labels: dict[str, str] | None = None, **values) -> SolverOptions:
        """Options from setting keywords (the others at their defaults). Every value is checked, in
        :data:`SETTINGS`' order, and an error names the keyword (or ``labels[keyword]``, e.g. a
        command-line flag); an unknown keyword is a TypeError listing the known ones."""
        unknown = sorted(set(values) - set(BY_NAME))
        if unknown:
            raise InvalidTypeError(f"{unknown[0]}: not a solver setting; expected one of {', '.join(BY_NAME)}")
        labels = labels or {}
        checked = {name: BY_NAME[name].check(value, labels.get(name)) for name, value in values.items()}
        return cls(**checked)

    def replace(self, **values) -> SolverOptions:
        """A copy with ``values`` changed (checked as in :meth:`from_keywords`)."""
        return replace(self, **SolverOptions.from_keywords(**values).keywords(tuple(values)))

    def keywords(self, names: tuple[str, ...] | None = None) -> dict:
        """The settings as keywords of the IK calls (all, or ``names``)."""
        return {name: getattr(self, name) for name in (names or BY_NAME)}


assert tuple(f.name for f in fields(SolverOptions)) == tuple(BY_NAME), "SolverOptions follows SETTINGS"
assert all(f.default == BY_NAME[f.name].default for f in fields(SolverOptions)), "one default per setting"
