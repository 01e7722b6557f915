"""Data parallelism of the zoo's own training loops (``vlm-sft``, ``vlm-semi-online``) under ``torchrun``.

``torchrun --nproc_per_node N -m zoo.cli train RECIPE`` (or ``accelerate launch``, which sets the same
variables) starts N copies of ``zoo train``; each is one rank of a process group. The loops built on
:class:`DataParallel` keep the maths of one process and split only the work:

- every rank holds the whole model (unless sharded, below) and draws the same global batch from the same data RNG, then keeps its
  contiguous shard (:meth:`DataParallel.shard`), so ``training.batch_size`` means the global batch whatever
  the number of processes;
- each rank's loss is scaled so that the gradients *summed* over ranks (:meth:`DataParallel.sum_gradients`)
  are the gradient of the one-process loss, and every rank then takes the same optimiser step: the ranks'
  weights stay bit-identical without a parameter broadcast after the first;
- logged values are reduced over ranks (:meth:`DataParallel.sum`), and only rank 0 writes the run directory
  (:func:`zoo.runs.is_main_process`); the others wait at :meth:`DataParallel.barrier`.

A recipe whose ``launch:`` names an FSDP config is sharded instead (:meth:`DataParallel.prepare`,
:mod:`zoo.sharding`): the same global batch and loss weights, but FSDP2 reduce-scatters the gradients as sums and each
rank steps only its shards.

Torch's ``DistributedDataParallel`` would do the gradient exchange too, but it averages the gradients of
per-rank *means*, which is not the one-process gradient when ranks hold different numbers of answer tokens;
the loops here know the global count and scale for it. One process is the degenerate case: no group, and
every method returns its input, so a one-process run is the same run it was before this module existed.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

import torch

if TYPE_CHECKING:
    from zoo.precision import Precision
    from zoo.sharding import Sharding

logger = logging.getLogger(__name__)

T = TypeVar("T")


class DataParallel:
    """This process's place in a ``torchrun`` job, and the few collectives the zoo's loops need.

    Joins the default process group when ``WORLD_SIZE > 1`` (gloo on the CPU, NCCL for CUDA tensors), or
    uses the one a launcher's library already started. :meth:`close` leaves a group it started.
    """

    def __init__(self, *, cuda: bool = False) -> None:
        self.world = int(os.environ.get("WORLD_SIZE", "1") or 1)
        self.rank = int(os.environ.get("RANK", "0") or 0)
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0") or 0)
        self.device = torch.device(f"cuda:{self.local_rank}") if cuda else torch.device("cpu")
        self._started = False
        self.sharded = False
        """The trained model is split over the ranks (:meth:`prepare` with an FSDP launch): gradients arrive summed."""
        if self.world > 1 and not torch.distributed.is_initialized():
            if cuda:
                torch.cuda.set_device(self.device)
            torch.distributed.init_process_group("nccl" if cuda else "gloo")
            self._started = True
            logger.info("process group of %d ranks (%s)", self.world, "nccl" if cuda else "gloo")

    @property
    def is_main(self) -> bool:
        """Rank 0: the process that writes the run directory."""
        return self.rank == 0

    def shard(self, items: Sequence[T]) -> list[T]:
        """This rank's contiguous slice of ``items`` (sizes differ by at most one; rank order is item order)."""
        n = len(items)
        return list(items[self.rank * n // self.world : (self.rank + 1) * n // self.world])

    def sum(self, values: Iterable[float]) -> list[float]:
        """Each value summed over the ranks (float64, so counts and losses add exactly enough)."""
        tensor = torch.tensor(list(values), dtype=torch.float64)
        if self.world > 1:
            tensor = tensor.to(self.device)
            torch.distributed.all_reduce(tensor)
        return tensor.cpu().tolist()

    def max(self, values: Iterable[float]) -> list[float]:
        """Each value's maximum over the ranks."""
        tensor = torch.tensor(list(values), dtype=torch.float64)
        if self.world > 1:
            tensor = tensor.to(self.device)
            torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.MAX)
        return tensor.cpu().tolist()

    def gather(self, obj: T) -> list[T]:
        """Every rank's ``obj`` (any picklable value), in rank order, on every rank."""
        if self.world == 1:
            return [obj]
        out: list[T | None] = [None] * self.world
        torch.distributed.all_gather_object(out, obj)
        return out  # type: ignore[return-value]  (every slot is filled by the collective)

    def prepare(self, model: torch.nn.Module, sharding: Sharding, precision: Precision) -> torch.nn.Module:
        """``model`` ready to train on this rank: split over the ranks with FSDP2 when ``sharding`` says so and the
        job was started by a launcher (:func:`zoo.sharding.shard`; every rank loaded the same weights), else on this
        rank's device with rank 0's weights (ranks that built their model on their own start equal).

        A launcher's single process (``torchrun --nproc_per_node 1``) shards over a group of one: nothing is split,
        but the config's CPU offload and the mixed-precision policy apply, which is how a 7B full fine-tune fits one
        GPU. A plain ``zoo train`` (no ``WORLD_SIZE``) holds the model whole."""
        if self.shards(sharding):
            from zoo.sharding import shard

            if not torch.distributed.is_initialized():  # one process under torchrun: a group of one
                torch.distributed.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
                self._started = True
            self.sharded = True
            logger.info("FSDP2 over %d ranks (launch %s): %s units, compute %s over %s shards%s", self.world,
                        sharding.launch, "/".join(sharding.units), precision.compute, precision.trained,
                        ", offloaded to the CPU" if sharding.offload else "")  # fmt: skip
            return shard(model, sharding, precision, self.device)
        model.to(self.device)
        self.broadcast_parameters(model)
        return model

    def shards(self, sharding: Sharding) -> bool:
        """Whether :meth:`prepare` splits the model under ``sharding``: an FSDP launch, started by a launcher."""
        return sharding.sharded and (self.world > 1 or "WORLD_SIZE" in os.environ)

    def sum_gradients(self, params: Sequence[torch.nn.Parameter], bucket: int = 1 << 24) -> None:
        """Replace every gradient by its sum over the ranks (a missing gradient counts as 0), ``bucket`` elements of
        one dtype per exchange so that the copy costs one bucket of memory, not the model's gradients twice. A
        sharded model's gradients are already sums (FSDP2's reduce-scatter): nothing to do.

        Every rank ends with the same bits: the all-reduce hands all ranks one result."""
        if self.world == 1 or self.sharded:
            return
        for param in params:
            if param.grad is None:
                param.grad = torch.zeros_like(param)
        pending: list[torch.Tensor] = []
        for grad in [p.grad for p in params]:
            if pending and (grad.dtype != pending[0].dtype or sum(g.numel() for g in pending) + grad.numel() > bucket):
                _all_reduce_into(pending)
                pending = []
            pending.append(grad)
        if pending:
            _all_reduce_into(pending)

    def broadcast_parameters(self, module: torch.nn.Module) -> None:
        """Rank 0's weights (and buffers) to every rank: ranks that built their model on their own start equal."""
        if self.world == 1:
            return
        with torch.no_grad():
            for tensor in [*module.parameters(), *module.buffers()]:
                torch.distributed.broadcast(tensor.data, src=0)

    def check_same_weights(self, module: torch.nn.Module | Mapping[str, torch.Tensor]) -> str:
        """The sha256 of ``module``'s weights (or of named tensors), after checking every rank holds the same bits.

        Raises :class:`RanksDivergedError` naming the ranks that differ from rank 0: a run whose ranks drifted
        apart (a non-deterministic kernel, a rank that skipped a step) must not be saved as if they agreed."""
        if self.sharded:  # one copy of the weights, split over the ranks: nothing is replicated to compare
            from zoo.sharding import full_state_dict

            # the weights already gathered on rank 0 (``{}`` elsewhere), or gathered here (a collective)
            state = module if isinstance(module, Mapping) else full_state_dict(module)
            digest = weights_digest(state) if self.is_main else ""
            if self.is_main:
                logger.info("weights sharded over %d ranks, gathered (sha256 %s)", self.world, digest[:16])
            return digest
        digest = weights_digest(module)
        if self.world == 1:
            return digest
        digests: list[str | None] = [None] * self.world
        torch.distributed.all_gather_object(digests, digest)
        apart = [rank for rank, other in enumerate(digests) if other != digests[0]]
        if apart:
            raise RanksDivergedError(f"ranks {apart} hold other weights than rank 0 ({digests[0][:12]}): "
                                     f"{[d[:12] for d in digests if d]}")  # fmt: skip
        logger.info("weights identical on all %d ranks (sha256 %s)", self.world, digest[:16])
        return digest

    def barrier(self) -> None:
        """Wait until every rank is here (after rank 0 wrote a checkpoint the others may read)."""
        if self.world > 1:
            torch.distributed.barrier()

    def close(self) -> None:
        """Leave the process group this object started (after a last barrier)."""
        if self._started:
            torch.distributed.barrier()
            torch.distributed.destroy_process_group()
            self._started = False


def _all_reduce_into(grads: list[torch.Tensor]) -> None:
    """Sum ``grads`` (one dtype) over the ranks through one flat buffer, written back in place."""
    flat = torch.cat([g.reshape(-1) for g in grads])
    torch.distributed.all_reduce(flat)
    offset = 0
    for grad in grads:
        grad.copy_(flat[offset : offset + grad.numel()].view_as(grad))
        offset += grad.numel()


class RanksDivergedError(RuntimeError):
    """The processes of a data-parallel run hold different weights where the maths says they must agree."""


def weights_digest(module: torch.nn.Module | Mapping[str, torch.Tensor]) -> str:
    """sha256 over the names, dtypes, shapes and bytes of ``module``'s parameters (in registration order), or of
    named tensors (by name, so that a safetensors file read back hashes the same as the dict it was saved from)."""
    named = module.named_parameters() if isinstance(module, torch.nn.Module) else sorted(module.items())
    digest = hashlib.sha256()
    for name, param in named:
        tensor = param.detach().cpu().contiguous()  # reshape(-1) below: 0-d tensors too
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def rank_seed(seed: int, rank: int, step: int = 0) -> int:
    """The seed of process ``rank``'s own draws: ``seed`` on rank 0 (a one-process run's), apart on every other
    rank, so that the processes draw different prompts, noise and samples; ``step`` (a resume that cannot restore
    the ranks' generators) moves it off the first rounds' draws."""
    return seed + 1_000_003 * rank + step
