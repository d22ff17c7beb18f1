"""`SummaryWriter`: PyTorch's ``torch.utils.tensorboard.SummaryWriter`` for ember.

Event files are written with tensorboardX (imported on first use, never by
``import ember``); values are read from tensors of any device through
``.detach().cpu().numpy()``.
"""

from __future__ import annotations

import io
import os
import socket
import time
from datetime import datetime
from typing import Any

from ._convert import to_float
from ._events import EventFile, check_log_dir, require_tensorboardx


def _default_bins() -> list[float]:
    # TensorFlow's histogram buckets: +-1e-12 growing by 10% up to 1e20, and 0
    v, buckets = 1e-12, []
    while v < 1e20:
        buckets.append(v)
        v *= 1.1
    return [-b for b in reversed(buckets)] + [0] + buckets


def _event(global_step: Any = None, walltime: float | None = None, **fields: Any) -> Any:
    """An ``Event`` holding ``fields``; ``global_step`` is checked here, before any write."""
    from tensorboardX.proto.event_pb2 import Event

    event = Event(**fields)
    event.wall_time = time.time() if walltime is None else float(walltime)
    if global_step is not None:
        event.step = int(global_step)
    return event


class SummaryWriter:
    r"""Writes entries directly to event files in ``log_dir`` to be consumed by TensorBoard.

    The ``SummaryWriter`` class provides a high-level API to create an event file in a
    given directory and add summaries and events to it. The file is written by a
    background thread, so logging does not slow training down.

    Args:
        log_dir (str or os.PathLike): save directory location. Default is
            ``runs/CURRENT_DATETIME_HOSTNAME``, which changes after each run. Use
            hierarchical folder structure to compare between runs easily, e.g. pass in
            ``'runs/exp1'``, ``'runs/exp2'``, etc. for each new experiment.
        comment (str): suffix appended to the default ``log_dir``. If ``log_dir`` is
            given, this argument has no effect.
        purge_step (int): when logging crashes at step :math:`T+X` and restarts at step
            :math:`T`, any events whose global_step is larger or equal to :math:`T` are
            purged and hidden from TensorBoard. Crashed and resumed experiments should
            have the same ``log_dir``.
        max_queue (int): size of the queue of pending events; once it is full, ``add``
            calls wait for the writing thread. Default: 10.
        flush_secs (int): how often, in seconds, to flush the pending events to disk.
            Default: every two minutes.
        filename_suffix (str): suffix added to all event file names in ``log_dir``.

    Raises:
        ImportError: tensorboardX is not installed (``pip install 'ember[tensorboard]'``).
        NotADirectoryError, PermissionError: ``log_dir`` cannot be written (the message
            names it); nothing is created.

    Example::

        from ember.utils.tensorboard import SummaryWriter

        # a writer with an automatically generated folder name
        writer = SummaryWriter()
        # folder location: runs/May04_22-14-54_s-MacBook-Pro.local/

        with SummaryWriter("runs/exp1") as writer:
            for step in range(100):
                writer.add_scalar("loss", loss, step)   # a number or a 1-element tensor
    """

    def __init__(self, log_dir: str | os.PathLike | None = None, comment: str = "",
                 purge_step: int | None = None, max_queue: int = 10,
                 flush_secs: float = 120, filename_suffix: str = "") -> None:
        require_tensorboardx()
        if not log_dir:
            current_time = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", current_time + "_" + socket.gethostname() + comment)
        check_log_dir(os.fspath(log_dir))
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        # The event files; cleared by close(), and made again by the next add_*.
        self.file_writer: EventFile | None = None
        self.all_writers: dict[str, EventFile] | None = None
        self._get_file_writer()
        self.default_bins = _default_bins()
        self._projector_config: list[str] = []  # add_embedding's entries

    def _new_file(self, log_dir: str) -> EventFile:
        check_log_dir(log_dir)
        return EventFile(log_dir, self.max_queue, self.flush_secs, self.filename_suffix)

    def _get_file_writer(self) -> EventFile:
        """The event file of ``log_dir``; opens a new one after ``close()``."""
        if self.all_writers is None or self.file_writer is None:
            from tensorboardX.proto.event_pb2 import SessionLog

            self.file_writer = self._new_file(os.fspath(self.log_dir))
            self.all_writers = {self.file_writer.log_dir: self.file_writer}
            if self.purge_step is not None:
                # TensorBoard hides the events at or after this step from earlier files
                step, self.purge_step = self.purge_step, None
                self.file_writer.add_event(_event(step, file_version="brain.Event:2"))
                self.file_writer.add_event(_event(step, session_log=SessionLog(
                    status=SessionLog.START)))
        return self.file_writer

    def get_logdir(self) -> str | os.PathLike:
        """Return the directory where event files will be written."""
        return self.log_dir

    def add_hparams(self, hparam_dict: dict[str, Any], metric_dict: dict[str, Any],
                    hparam_domain_discrete: dict[str, list[Any]] | None = None,
                    run_name: str | None = None, global_step: int | None = None) -> None:
        """Add a set of hyperparameters to be compared in TensorBoard.

        As in PyTorch, they go to a sub-run ``<log_dir>/<run_name>`` with the metrics.

        Args:
            hparam_dict (dict): each key-value pair is the name of the hyperparameter and
                its value: a ``bool``, ``str``, ``int``, ``float``, one-element tensor, or
                ``None`` (left out). A ``bool`` is logged as a bool (PyTorch logs it as
                the number 0 or 1).
            metric_dict (dict): each key-value pair is the name of a metric and its
                value, logged as a scalar in the sub-run. The key should be unique in the
                TensorBoard record, or the value added by ``add_scalar`` shows in the
                hparams plugin.
            hparam_domain_discrete (dict, optional): names of hyperparameters and all the
                discrete values they can hold.
            run_name (str): name of the sub-run, a folder under ``log_dir``. Default: the
                current timestamp.
            global_step (int): global step value to record.

        Example::

            with SummaryWriter() as w:
                for i in range(5):
                    w.add_hparams({"lr": 0.1 * i, "bsize": i},
                                  {"hparam/accuracy": 10 * i, "hparam/loss": 10 * i})
        """
        from . import _summary

        exp, ssi, sei = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        metrics = {k: to_float(v, f"add_hparams: metric {k!r}") for k, v in metric_dict.items()}
        if global_step is not None:
            global_step = int(global_step)
        if not run_name:
            run_name = str(time.time())
        logdir = os.path.join(self._get_file_writer().log_dir, run_name)
        with SummaryWriter(log_dir=logdir) as w_hp:
            for summary in (exp, ssi, sei):
                w_hp._get_file_writer().add_event(_event(global_step, summary=summary))
            for name, value in metrics.items():
                w_hp.add_scalar(name, value, global_step)

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """Add scalar data to summary.

        Args:
            tag (str): data identifier.
            scalar_value (float or Tensor): value to save: a number, or a tensor or array
                with one element (on any device).
            global_step (int): global step value to record.
            walltime (float): override the default walltime (``time.time()``), in seconds
                after the epoch.
            new_style (bool): store the value as a tensor (new style) rather than as a
                ``simple_value`` (old style). New style can load faster.
            double_precision (bool): with ``new_style``, store a float64.

        Raises:
            ValueError: ``scalar_value`` has more than one element.

        Example::

            writer = SummaryWriter()
            for i in range(100):
                writer.add_scalar("y=2x", i * 2, i)
            writer.close()
        """
        from . import _summary

        summary = _summary.scalar(tag, scalar_value, new_style, double_precision)
        self._get_file_writer().add_event(_event(global_step, walltime, summary=summary))

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any],
                    global_step: int | None = None, walltime: float | None = None) -> None:
        """Add many scalar data to summary, drawn in one chart.

        Each value goes to its own sub-run, ``<log_dir>/<main_tag>_<tag>`` (``/`` in
        ``main_tag`` replaced by ``_``), under the tag ``main_tag``.

        Args:
            main_tag (str): the parent name for the tags.
            tag_scalar_dict (dict): key-value pairs storing the tag and corresponding
                values.
            global_step (int): global step value to record.
            walltime (float): override the default walltime (``time.time()``).

        Example::

            for i in range(100):
                writer.add_scalars("run_14h", {"xsinx": i * np.sin(i / 5),
                                               "xcosx": i * np.cos(i / 5)}, i)
        """
        from . import _summary

        walltime = time.time() if walltime is None else walltime
        summaries = {tag: _summary.scalar(main_tag, value)
                     for tag, value in tag_scalar_dict.items()}
        events = {tag: _event(global_step, walltime, summary=s) for tag, s in summaries.items()}
        fw_logdir = self._get_file_writer().log_dir
        for tag, event in events.items():
            fw_tag = fw_logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            assert self.all_writers is not None
            if fw_tag not in self.all_writers:
                self.all_writers[fw_tag] = self._new_file(fw_tag)
            self.all_writers[fw_tag].add_event(event)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None,
                      bins: Any = "tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        """Add a histogram to summary.

        Args:
            tag (str): data identifier.
            values (Tensor, numpy.ndarray or list): values to build the histogram from; a
                tensor may live on any device.
            global_step (int): global step value to record.
            bins (str, int or sequence): ``"tensorflow"`` (TensorFlow's exponential
                buckets), or anything ``numpy.histogram`` takes (``"auto"``, ``"fd"``, a
                count, the edges).
            walltime (float): override the default walltime (``time.time()``).
            max_bins (int): merge neighbouring buckets down to at most this many.

        Example::

            for i in range(10):
                writer.add_histogram("distribution centers", ember.rand(1000) + i, i)
        """
        from . import _summary

        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        summary = _summary.histogram(tag, values, bins, max_bins=max_bins)
        self._get_file_writer().add_event(_event(global_step, walltime, summary=summary))

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """Add image data to summary.

        Args:
            tag (str): data identifier.
            img_tensor (Tensor or numpy.ndarray): the image. uint8 values are taken as
                0-255; any other dtype as 0-1 (scaled by 255, clipped).
            global_step (int): global step value to record.
            walltime (float): override the default walltime (``time.time()``).
            dataformats (str): the order of the image's dimensions: ``CHW``, ``HWC``,
                ``HW``, ``WH``, etc.

        Shape:
            img_tensor: default :math:`(3, H, W)`; :math:`(1, H, W)`, :math:`(H, W)`,
            :math:`(H, W, 3)` ... with the matching ``dataformats``. Channels: 1 (grey),
            3 (RGB) or 4 (RGBA).

        Raises:
            ValueError: ``dataformats`` is unknown or does not fit the image's shape.
        """
        from . import _summary

        summary = _summary.image(tag, img_tensor, dataformats)
        self._get_file_writer().add_event(_event(global_step, walltime, summary=summary))

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """Add batched image data to summary, tiled into one image (8 per row).

        Args:
            tag (str): data identifier.
            img_tensor (Tensor or numpy.ndarray): the images; dtypes as for
                :meth:`add_image`.
            global_step (int): global step value to record.
            walltime (float): override the default walltime (``time.time()``).
            dataformats (str): ``NCHW``, ``NHWC``, ``CHW``, ``HWC``, ``HW``, ``WH``, etc.

        Shape:
            img_tensor: default :math:`(N, 3, H, W)`.
        """
        from . import _summary

        summary = _summary.image(tag, img_tensor, dataformats, what="add_images")
        self._get_file_writer().add_event(_event(global_step, walltime, summary=summary))

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Add text data to summary (TensorBoard renders it as Markdown).

        Args:
            tag (str): data identifier.
            text_string (str): string to save.
            global_step (int): global step value to record.
            walltime (float): override the default walltime (``time.time()``).

        Example::

            writer.add_text("lstm", "This is an lstm", 0)
        """
        from . import _summary

        summary = _summary.text(tag, text_string)
        self._get_file_writer().add_event(_event(global_step, walltime, summary=summary))

    def add_onnx_graph(self, prototxt: str | os.PathLike) -> None:
        """Add the graph of an ONNX model file to summary.

        Args:
            prototxt (str or os.PathLike): the ``.onnx`` file.
        """
        import onnx

        from ._graph import onnx_to_graphdef

        graph = onnx_to_graphdef(onnx.load(os.fspath(prototxt), load_external_data=False))
        self._get_file_writer().add_event(_event(graph_def=graph.SerializeToString()))

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Add a model's graph to summary, for TensorBoard's graph dashboard.

        The model is traced on ``input_to_model`` in eval mode and exported with ember's
        ONNX exporter (``ember.onnx.export``, in memory; needs ``onnx``); nodes are named
        and grouped by module path.

        Args:
            model (ember.nn.Module): model to draw (or a function of tensors).
            input_to_model (Tensor or list of Tensor): the example input(s) it runs on.
            verbose (bool): print the graph.
            use_strict_trace (bool): accepted for PyTorch's signature; ember's tracer
                records container outputs (lists, dicts) either way.

        Raises:
            ValueError: ``input_to_model`` is missing.
            ember.onnx.UnsupportedOperatorError: an op cannot be exported; nothing is
                written.
        """
        from ember import onnx as ember_onnx

        from ._graph import onnx_to_graphdef

        if input_to_model is None:
            raise ValueError("add_graph: input_to_model is required: ember draws the graph "
                             "by tracing the model on this example input")
        args = tuple(input_to_model) if isinstance(input_to_model, (list, tuple)) \
            else input_to_model
        # Parameters as graph inputs (export_params=False): only the graph's shape is
        # drawn, so no weights need serializing, whatever the model's size.
        proto = ember_onnx.export(model, args, io.BytesIO(), export_params=False,
                                  verbose=verbose)
        graph = onnx_to_graphdef(proto, len(args) if isinstance(args, tuple) else 1,
                                 module_scopes=True)
        self._get_file_writer().add_event(_event(graph_def=graph.SerializeToString()))

    def add_embedding(self, mat: Any, metadata: list | None = None, label_img: Any = None,
                      global_step: int | None = None, tag: str = "default",
                      metadata_header: list | None = None) -> None:
        """Add embedding projector data to summary.

        Writes ``<global_step:05d>/<tag>/`` under the log dir (``tensors.tsv``, and
        ``metadata.tsv`` / ``sprite.png`` when given) and lists it in
        ``projector_config.pbtxt``, as PyTorch does.

        Args:
            mat (Tensor or numpy.ndarray): a matrix whose rows are the data points.
            metadata (list): one label per data point (or a row per point, with
                ``metadata_header``).
            label_img (Tensor): images (N, C, H, W), square, in [0, 1], one per point.
            global_step (int): global step value to record (default 0).
            tag (str): name for the embedding.
            metadata_header (list): column names of a multi-column ``metadata``.

        Raises:
            AssertionError: the labels or images do not match the data points, or ``mat``
                is not 2-D (PyTorch's messages; checked before anything is written).
            NotADirectoryError: the embedding's folder is a file.
        """
        from ._convert import to_numpy
        from ._projector import (
            embedding_info,
            encode_tag,
            write_config,
            write_mat,
            write_sprite,
            write_tsv,
        )

        mat = to_numpy(mat, "add_embedding(mat)")
        if global_step is None:
            global_step = 0
        if metadata is not None:
            assert mat.shape[0] == len(metadata), "#labels should equal with #data points"
        images = None if label_img is None else to_numpy(label_img, "add_embedding(label_img)")
        if images is not None:
            assert mat.shape[0] == images.shape[0], "#images should equal with #data points"
        assert mat.ndim == 2, "mat should be 2D, where mat.size(0) is the number of data points"
        subdir = f"{str(global_step).zfill(5)}/{encode_tag(tag)}"
        log_dir = os.fspath(self._get_file_writer().log_dir)
        save_path = os.path.join(log_dir, subdir)
        if os.path.isdir(save_path):
            print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
        elif os.path.exists(save_path):
            raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot "
                                     "proceed.")
        os.makedirs(save_path, exist_ok=True)
        if metadata is not None:
            write_tsv(metadata, save_path, metadata_header)
        if images is not None:
            write_sprite(images, save_path)
        write_mat(mat, save_path)
        # the config is rewritten whole with every embedding added, as PyTorch does
        self._projector_config.append(embedding_info(
            metadata is not None, None if images is None else images.shape, subdir,
            global_step, tag))
        write_config(log_dir, self._projector_config)

    def add_pr_curve(self, tag: str, labels: Any, predictions: Any,
                     global_step: int | None = None, num_thresholds: int = 127,
                     weights: Any = None, walltime: float | None = None) -> None:
        """Add a precision-recall curve.

        Args:
            tag (str): data identifier.
            labels (Tensor, numpy.ndarray): ground truth: True/1 for the positives.
            predictions (Tensor, numpy.ndarray): the probability that each element is a
                positive, in [0, 1].
            global_step (int): global step value to record.
            num_thresholds (int): the number of thresholds the curve is drawn at (at most
                127).
            weights: accepted as PyTorch's (each element's weight).
            walltime (float): override the default walltime (``time.time()``).
        """
        from tensorboardX.summary import pr_curve

        from ._convert import to_numpy

        labels = to_numpy(labels, "add_pr_curve(labels)")
        predictions = to_numpy(predictions, "add_pr_curve(predictions)")
        summary = pr_curve(tag, labels, predictions, num_thresholds, weights)
        self._get_file_writer().add_event(_event(global_step, walltime, summary=summary))

    def flush(self) -> None:
        """Flush the event files to disk.

        Call this method to make sure that all pending events have been written to disk.
        """
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        """Flush and close the event files. A later ``add_*`` opens a new event file."""
        if self.all_writers is None:
            return  # closing twice does nothing
        writers, self.file_writer, self.all_writers = self.all_writers, None, None
        errors = []
        for writer in writers.values():
            try:
                writer.close()
            except OSError as err:  # close the others anyway
                errors.append(err)
        if errors:
            raise errors[0]

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.close()
