"""Backend plugins: discovery through entry points, loaded and managed with pluggy.

Every backend, the built-in ones included, is a module registered in the entry-point
group `ember.backends` that implements the hooks below. Discovery is lazy (the first
device query) and each plugin loads inside its own try/except, so a broken plugin never
breaks `import ember`: its error is kept, shown by `ember devices`, and raised when its
device is asked for.

Switches:
    EMBER_PLUGIN_AUTOLOAD=0   load ember's own backends only.
    EMBER_BACKENDS=cuda,cpu   an allow-list and order of backends; every error is loud.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from ember.core.backend import (
    API_VERSION,
    COMPLEX_DTYPES,
    REQUIRED_COMPLEX_KERNELS,
    REQUIRED_KERNELS,
    Backend,
    Kernel,
)
from ember.core.errors import with_context

GROUP = "ember.backends"
# the device types PyTorch's device-string parser lists when it knows none by that name
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep",
                       "hip", "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta",
                       "hpu", "mtia", "privateuseone")
BUILTIN = {"cpu": "ember.backends.cpu", "cuda": "ember.backends.cuda",
           "opencl": "ember.backends.opencl"}
RESERVED = {"auto", "meta"}
# Ember's own shape-only device (`device="meta"`): no plugin, loaded by name on first use;
# not among `registry.backends`, so it is never listed, benchmarked or chosen by "auto".
META = "ember.backends.meta"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

hookspec = pluggy.HookspecMarker("ember")


# What a plugin's code may raise without ending the program: SystemExit too (a plugin
# calling sys.exit while it loads), not KeyboardInterrupt.
PLUGIN_ERRORS = (Exception, SystemExit)


class EmberHookSpecs:
    """The hooks an ember plugin may implement (mark them with
    `ember.core.backend.hookimpl`)."""

    @hookspec
    def ember_backends(self) -> list[Callable[[], Backend]]:
        """Return factories (usually the classes) of the backends this plugin provides.

        Each factory is called once, with no arguments, and must be cheap: import heavy
        libraries (CuPy, pyopencl) and create contexts on first use, not here.
        """

    @hookspec
    def ember_backend_kernels(self, backend: Backend) -> dict[str, Kernel] | None:
        """Return kernels to add to, or override in, `backend` (any plugin's), keyed by op
        name, or None. Called once for every loaded backend, after all are created."""

    @hookspec
    def ember_onnx_converters(self) -> dict[str, Callable[..., Any]] | None:
        """Return ONNX converters for this plugin's own ops: export converters keyed by
        ember op name (str), import converters keyed by (domain, op_type, since_version)."""


@dataclass
class PluginRecord:
    """One entry point found in the `ember.backends` group, and what became of it."""

    name: str
    target: str  # "module" or "module:attr"
    distribution: str | None
    module: Any = None
    backends: list[str] = field(default_factory=list)
    error: str | None = None  # why it failed to load, or None


class PluginRegistry:
    """The loaded backends, and the errors of those that failed."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager("ember")
        self.pm.add_hookspecs(EmberHookSpecs)
        self.plugins: list[PluginRecord] = []
        self.backends: dict[str, Backend] = {}
        self.errors: dict[str, str] = {}  # backend or plugin name -> why it failed
        self.offered: list[str] = []  # every backend the plugins offer, EMBER_BACKENDS or not
        # Every backend's generator starts from one seed drawn from the OS, as PyTorch
        # seeds its default generator at start-up (ember.initial_seed() returns it).
        self.startup_seed = int.from_bytes(os.urandom(8), "little") >> 1
        self._meta: Backend | None = None
        self._loaded = False
        self._failure: BaseException | None = None  # a loud (EMBER_BACKENDS) load error
        self._lock = threading.RLock()

    # -- discovery --------------------------------------------------------------------
    def ensure_loaded(self) -> None:
        if self._loaded:
            if self._failure is not None:  # every later query repeats the original error
                raise self._failure
            return
        with self._lock:
            if not self._loaded:
                self._loaded = True
                try:
                    self._load()
                except Exception as err:
                    self._failure = err
                    raise

    def _load(self) -> None:
        allow = _allow_list()
        loud = allow is not None
        for record in _entry_points():
            self.plugins.append(record)
            try:
                record.module = _import(record.target)
                self.pm.register(record.module, name=f"ember-plugin-{record.name}")
            except PLUGIN_ERRORS as err:  # a broken plugin must not break ember
                record.error = f"{_describe(err)} [{_origin(record)}]"
                self.errors[record.name] = record.error
                if loud:
                    raise RuntimeError(f"ember plugin {record.name!r} ({record.target}) failed "
                                       f"to load: {record.error}") from err
                continue
            self._create_backends(record, allow, loud)
        if allow is not None:
            missing = [n for n in allow if n not in self.backends]
            if missing:
                offered = ", ".join(self.offered) or "none"
                raise RuntimeError(f"EMBER_BACKENDS names {', '.join(missing)}, which no "
                                   f"plugin provides (the plugins offer: {offered})")
            self.backends = {n: self.backends[n] for n in allow}
        self._apply_kernel_hooks(loud)

    def _create_backends(self, record: PluginRecord, allow, loud: bool) -> None:
        impl = getattr(record.module, "ember_backends", None)
        if impl is None:
            return
        try:
            factories = list(impl() or [])
        except PLUGIN_ERRORS as err:
            record.error = f"{_describe(err)} [{_origin(record)}]"
            self.errors[record.name] = record.error
            if loud:
                raise RuntimeError(f"ember plugin {record.name!r}: ember_backends() failed: "
                                   f"{record.error}") from err
            return
        for factory in factories:
            try:
                backend = factory()
                name = getattr(backend, "name", None)
                self.offered.append(str(name))
                if allow is not None and name not in allow:
                    continue
                self._validate(record, backend)
            except PLUGIN_ERRORS as err:
                label = getattr(factory, "name", None) or record.name
                if not isinstance(label, str):
                    label = record.name
                if label in self.backends or label in self.errors:
                    label = f"{label} (from plugin {record.name})"
                self.errors[label] = f"{_describe(err)} [{_origin(record)}]"
                if loud:
                    raise RuntimeError(f"ember plugin {record.name!r}: backend {label!r} "
                                       f"refused: {self.errors[label]}") from err
                continue
            self.backends[backend.name] = backend
            record.backends.append(backend.name)
            try:
                backend.manual_seed(self.startup_seed)
            except Exception:  # noqa: S110 - a backend that cannot seed yet seeds on demand
                pass

    def _validate(self, record: PluginRecord, backend: Any) -> None:
        name = getattr(backend, "name", None)
        if not isinstance(backend, Backend):
            raise TypeError(f"{backend!r} is not an ember.core.backend.Backend")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"invalid backend name {name!r}: use lower-case letters, digits "
                             "and '_', starting with a letter")
        if name in RESERVED:
            raise ValueError(f"backend name {name!r} is reserved by ember")
        builtin_module = BUILTIN.get(name)
        if builtin_module is not None and record.target.split(":")[0] != builtin_module:
            raise ValueError(f"backend name {name!r} clashes with ember's built-in backend")
        if name in self.backends:
            raise ValueError(f"backend name {name!r} is already taken by another plugin")
        if backend.api_version != API_VERSION:
            raise RuntimeError(f"backend {name!r} was built for ember backend API version "
                               f"{backend.api_version}, but this ember speaks version "
                               f"{API_VERSION}; upgrade the plugin or ember")

    def _apply_kernel_hooks(self, loud: bool) -> None:
        records = {f"ember-plugin-{r.name}": r for r in self.plugins}
        for impl in self.pm.hook.ember_backend_kernels.get_hookimpls():
            record = records.get(impl.plugin_name)
            label = record.name if record else impl.plugin_name
            for backend in self.backends.values():
                try:
                    extra = impl.function(backend=backend)
                    if extra:
                        backend.kernels.update(extra)
                except PLUGIN_ERRORS as err:
                    where = f" [{_origin(record)}]" if record else ""
                    self.errors[label] = (f"ember_backend_kernels({backend.name}) failed: "
                                          f"{_describe(err)}{where}")
                    if loud:
                        raise RuntimeError(f"ember plugin {label!r}: "
                                           f"{self.errors[label]}") from err

    # -- queries ----------------------------------------------------------------------
    def get(self, name: str) -> Backend:
        """The loaded backend called `name`, or a RuntimeError that says what exists."""
        if name == "meta":
            return self.meta()
        self.ensure_loaded()
        backend = self.backends.get(name)
        if backend is not None:
            return backend
        if name in self.errors:
            raise RuntimeError(f"device type {name!r} is provided by a plugin that failed to "
                               f"load: {self.errors[name]}\n{self.summary()}")
        hint = ""
        if os.environ.get("EMBER_PLUGIN_AUTOLOAD", "1").strip() == "0":
            hint = " (third-party plugins are not loaded: EMBER_PLUGIN_AUTOLOAD=0"
            if any(ep.name == name for ep in
                   importlib.metadata.entry_points(group=GROUP)):
                hint += f"; an installed plugin provides {name!r}"
            hint += ")"
        if hint or self.errors or name in _TORCH_DEVICE_TYPES:
            # ember's own case (plugins off or broken: what they say matters most), or a
            # type PyTorch knows: ember's words
            raise RuntimeError(f"unknown device type {name!r}{hint}.\n{self.summary()}")
        if not re.fullmatch(r"[a-zA-Z_]+", name):  # not a name PyTorch's parser takes
            message = f"Invalid device string: {name!r}"  # x.to("float32")
        else:
            message = (f"Expected one of {', '.join(_TORCH_DEVICE_TYPES)} device type at "
                       f"start of device string: {name}")
        raise with_context(RuntimeError(message),
                           f"unknown device type {name!r}.\n{self.summary()}")

    def meta(self) -> Backend:
        """The shape-only backend of the "meta" device, created on first use."""
        if self._meta is None:
            with self._lock:
                if self._meta is None:
                    self._meta = _import(META).MetaBackend()
        return self._meta

    def summary(self) -> str:
        """One line per backend and broken plugin: what can be used and why not."""
        lines = []
        for name, backend in self.backends.items():
            reason = safe_unavailable_reason(backend)
            lines.append(f"  {name}: " + ("available" if reason is None
                                          else f"unavailable ({reason})"))
        for name, error in self.errors.items():
            lines.append(f"  {name}: broken plugin ({error.splitlines()[0]})")
        return "Devices:\n" + "\n".join(lines)

    def onnx_converters(self) -> dict[Any, Callable[..., Any]]:
        self.ensure_loaded()
        out: dict[str, Callable[..., Any]] = {}
        for result in self.pm.hook.ember_onnx_converters():
            if result:
                out.update(result)
        return out


def safe_unavailable_reason(backend: Backend) -> str | None:
    """Why `backend` cannot be used now, or None. Never raises: a plugin may override
    `unavailable_reason` or `is_available`, and either may fail."""
    try:
        reason = backend.unavailable_reason()
        if reason is None and type(backend).is_available is not Backend.is_available \
                and not backend.is_available():
            reason = "is_available() returned False"
    except PLUGIN_ERRORS as err:  # a backend's probe must not take ember down
        return f"availability check failed: {_describe(err)}"
    if reason is None:
        kernels = backend.kernels  # (checked on every device lookup: no set of them all)
        missing = sorted([k for k in REQUIRED_KERNELS if k not in kernels])
        if not missing and COMPLEX_DTYPES[0] in backend.dtypes:
            missing = sorted([k for k in REQUIRED_COMPLEX_KERNELS if k not in kernels])
        if missing:
            return (f"it lacks the required kernels {', '.join(missing)} (views and in-place "
                    "writes must be native)")
    return reason


def _allow_list() -> list[str] | None:
    raw = os.environ.get("EMBER_BACKENDS", "").strip()
    if not raw:
        return None
    return [n.strip().lower() for n in raw.split(",") if n.strip()]


def _entry_points() -> list[PluginRecord]:
    found = [PluginRecord(ep.name, ep.value, ep.dist.name if ep.dist else None)
             for ep in importlib.metadata.entry_points(group=GROUP)]
    found = _dedupe(found)
    builtin_targets = set(BUILTIN.values())
    if os.environ.get("EMBER_PLUGIN_AUTOLOAD", "1").strip() == "0":
        found = [r for r in found if r.target in builtin_targets]
    # Running from a source tree that was never installed: no entry points of our own.
    have = {r.target for r in found}
    for name, target in BUILTIN.items():
        if target not in have:
            found.append(PluginRecord(name, target, "ember"))
    # built-ins first, so their names are taken before any third party's
    found.sort(key=lambda r: r.target not in builtin_targets)
    return found


def _dedupe(records: list[PluginRecord]) -> list[PluginRecord]:
    # the same distribution can be visible twice (an editable install plus a source path)
    seen, out = set(), []
    for r in records:
        if (r.name, r.target) not in seen:
            seen.add((r.name, r.target))
            out.append(r)
    return out


def _import(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def _origin(record: PluginRecord) -> str:
    dist = record.distribution or "unknown distribution"
    return f"entry point {record.name!r} = {record.target} of {dist}"


def _describe(err: BaseException) -> str:
    frames = traceback.extract_tb(err.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(err).__name__}: {err}{where}"


registry = PluginRegistry()


def get_backend(name: str) -> Backend:
    return registry.get(name)


def reset() -> None:
    """Forget every loaded plugin (tests use this after changing the switches)."""
    global registry
    registry = PluginRegistry()
