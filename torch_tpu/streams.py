"""`torch.tpu.Stream`, `torch.tpu.Event` and the current-stream functions, as torch.cuda has them.

Both classes subclass the generic `torch.Stream` / `torch.Event`, which call the device guard
(csrc/aten/device_guard.cpp): a `torch.tpu.Stream` is a `torch.Stream` and `torch.Stream(device=
"tpu")`, `torch.accelerator.current_stream()` and this module agree on the current stream.

PJRT runs each device's launches in launch order, so every stream of a device is one queue:
work on two streams never overlaps, and `wait_stream` / `wait_event` are satisfied by launch
order. Events are real: `record()` marks the work launched so far; `query()` is False until
that work has completed, `synchronize()` waits for it (raising its execution error) and
`elapsed_time()` measures between the completions of two events' work. In fused mode an event
covers the ops recorded in the pending graph too; the graph runs at the event's first
`query()` / `synchronize()` rather than at `record()` (so recording does not cut the graph),
or at `record()` for a timing event (so the time is that of the record).
"""

import torch

from torch_tpu import _C

__all__ = [
    "Stream",
    "Event",
    "StreamContext",
    "stream",
    "current_stream",
    "default_stream",
    "set_stream",
]


def _index(device):
    """Index of a tpu device given as None (the current one), an int or a torch.device/str."""
    if device is None:
        return _C._current_device()
    if isinstance(device, int):
        return _C._current_device() if device < 0 else device
    device = torch.device(device)
    if device.type != "tpu":
        raise ValueError(f"Expected a tpu device, but got: {device}")
    return _C._current_device() if device.index is None else device.index


class Stream(torch.Stream):
    """An in-order queue of work on a tpu device (see the module note: one queue per device).

    Args:
        device (torch.device or int, optional): the stream's device; the current one if None.
        priority (int, optional): accepted for CUDA compatibility; with one queue per device
            there is nothing to prioritise.
    """

    def __new__(cls, device=None, priority=0, **kwargs):
        if "stream_id" in kwargs:  # wraps an existing stream (stream_id, device_index, device_type)
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, device=torch.device("tpu", _index(device)), priority=priority)

    def wait_event(self, event):
        """Makes work submitted to this stream later wait for `event` (launch order does)."""
        event.wait(self)

    def wait_stream(self, stream):
        """Makes work submitted to this stream later wait for `stream`'s work so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Records `event` (a new Event if None) on this stream and returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    @property
    def priority(self):
        return 0

    def __repr__(self):
        return f"<torch.tpu.Stream device={self.device} stream_id={self.stream_id}>"


class Event(torch.Event):
    """A marker of the work launched on a tpu device when it was recorded.

    Args:
        enable_timing (bool): whether `elapsed_time` may use the event (default False).
        blocking, interprocess (bool): accepted like torch.Event's; no effect.
    """

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        event = super().__new__(
            cls,
            device="tpu",
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )
        event._enable_timing = bool(enable_timing)
        return event

    def elapsed_time(self, end_event):
        """Milliseconds between the completion of this event's work and of `end_event`'s."""
        if type(end_event) is torch.Event:
            return super().elapsed_time(end_event)
        # torch.Event.elapsed_time takes only an exact torch.Event as `end_event`: the same
        # checks, in the same order and words, then the device guard's elapsedTime.
        if not (self._enable_timing and getattr(end_event, "_enable_timing", False)):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if not (self.event_id and end_event.event_id):
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        if not (self.query() and end_event.query()):
            raise RuntimeError("Both events must be completed before calculating elapsed time.")
        return _C._elapsed_time(self.event_id, end_event.event_id, self.device.index)

    def record(self, stream=None):
        """Marks the work launched so far on `stream`'s device (the current stream if None)."""
        super().record(current_stream() if stream is None else stream)

    def wait(self, stream=None):
        """Makes work submitted to `stream` later wait for this event (launch order does)."""
        super().wait(current_stream() if stream is None else stream)

    def __repr__(self):
        state = "recorded" if self.event_id else "unrecorded"
        return f"<torch.tpu.Event {state} device={self.device}>"


def _wrap(data):
    stream_id, device_index, device_type = data
    return Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)


def _generic_device(device):
    # torch.accelerator's spelling of `device`, for compiled code.
    return torch.device("tpu", device) if isinstance(device, int) else torch.device(device)


def current_stream(device=None):
    """This thread's current stream of `device` (the current device if None)."""
    if torch.compiler.is_compiling():
        # Dynamo traces torch.accelerator.current_stream (the same stream, as a torch.Stream);
        # torch_tpu._C is opaque to it.
        if device is None:
            return torch.accelerator.current_stream()
        return torch.accelerator.current_stream(_generic_device(device))
    return _wrap(_C._current_stream(_index(device)))


def default_stream(device=None):
    """The default stream of `device` (the current device if None)."""
    return _wrap(_C._default_stream(_index(device)))


def set_stream(stream):
    """Makes `stream` this thread's current stream, and its device the current device; no-op
    for None. Prefer the `stream` context manager."""
    if stream is None:
        return
    _set_stream_by_id(stream.stream_id, stream.device_index, stream.device_type)


def _set_stream_by_id(stream_id, device_index, device_type):
    # Dynamo's device interface restores streams by id (torch.cuda has the same function).
    _C._set_stream(stream_id, device_index)


class StreamContext:
    """Selects `stream` (and its device) inside a `with` block; no-op for None."""

    def __init__(self, stream):
        self.stream = stream
        self.src_prev_stream = None
        self.dst_prev_stream = None

    def __enter__(self):
        if self.stream is None:
            return
        self.src_prev_stream = current_stream()
        # Switching to another device's stream also switches the device: that device's
        # current stream is restored on exit too.
        if self.src_prev_stream.device != self.stream.device:
            self.dst_prev_stream = current_stream(self.stream.device)
        set_stream(self.stream)

    def __exit__(self, *exc):
        if self.stream is None:
            return
        if self.dst_prev_stream is not None:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)


def stream(stream):
    """Context manager selecting `stream`, like torch.cuda.stream."""
    if torch.compiler.is_compiling() and stream is not None:
        # Dynamo traces a torch.Stream used as a context manager, which selects the stream and
        # its device the same way.
        return stream
    return StreamContext(stream)
