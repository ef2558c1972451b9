"""What a planned run would rent: Azure VM sizes and their prices (``analysis/vm_sizes.csv``),
nodes per run, launchers' start-up and billing, and the parsing of ``--deadline``/``--budget``.

The capacity plan (:mod:`analysis.plan_model`) prices its candidates with these; the numbers
behind them are documented in the CSV (source, region and date of every price) and in
:data:`LAUNCHERS` (assumptions, not measurements).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = [
    "DEFAULT_LAUNCHER",
    "LAUNCHERS",
    "Launcher",
    "USABLE_MEMORY_FRACTION",
    "VMSize",
    "billed_seconds",
    "load_vm_sizes",
    "nodes_for",
    "parse_duration",
    "parse_money",
    "run_cost_usd",
]


@dataclass(frozen=True)
class VMSize:
    """One Azure VM size (a row of ``vm_sizes.csv``).

    Attributes:
        name: e.g. ``Standard_D4s_v5``.
        vcpus: vCPUs per VM.
        memory_gib: memory per VM (GiB).
        gpus: GPUs per VM; gpu_model: their model.
        price_per_hour_usd: pay-as-you-go Linux price per VM-hour (US dollars).
        low_priority_discount: fraction off with low-priority/spot capacity (0-1).
        region, price_source, price_date, discount_source: provenance of the numbers.
    """

    name: str
    vcpus: int
    memory_gib: float
    gpus: int
    gpu_model: str
    price_per_hour_usd: float
    low_priority_discount: float
    region: str
    price_source: str
    price_date: str
    discount_source: str

    def hourly_usd(self, low_priority: bool = False) -> float:
        """Price per VM-hour in US dollars, after the low-priority discount if asked."""
        return self.price_per_hour_usd * (
            (1.0 - self.low_priority_discount) if low_priority else 1.0
        )


def load_vm_sizes(path: str | Path | None = None) -> dict[str, VMSize]:
    """Read the VM size table (default: the shipped ``analysis/vm_sizes.csv``).

    Raises:
        ValueError: a row with a missing or non-numeric field (the message names it).
    """
    if path is None:
        text = resources.files("analysis").joinpath("vm_sizes.csv").read_text()
        where = "analysis/vm_sizes.csv"
    else:
        text = Path(path).read_text()
        where = str(path)
    out: dict[str, VMSize] = {}
    for i, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        try:
            vm = VMSize(
                name=row["name"].strip(),
                vcpus=int(row["vcpus"]),
                memory_gib=float(row["memory_gib"]),
                gpus=int(row["gpus"] or 0),
                gpu_model=row.get("gpu_model") or "",
                price_per_hour_usd=float(row["price_per_hour_usd"]),
                low_priority_discount=float(row["low_priority_discount"] or 0.0),
                region=row.get("region") or "",
                price_source=row.get("price_source") or "",
                price_date=row.get("price_date") or "",
                discount_source=row.get("discount_source") or "",
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where} line {i}: bad or missing field ({exc})") from None
        if vm.vcpus < 1 or vm.price_per_hour_usd < 0 or not 0 <= vm.low_priority_discount < 1:
            raise ValueError(
                f"{where} line {i}: {vm.name}: vcpus must be >= 1, price >= 0 and "
                "0 <= low_priority_discount < 1"
            )
        out[vm.name] = vm
    return out


_DURATION = re.compile(
    r"(\d+(?:\.\d+)?)\s*(hours?|hr|h|minutes?|min|m|seconds?|sec|s)", re.IGNORECASE
)


def parse_duration(text: str, what: str = "deadline", *, zero: bool = False) -> float:
    """Parse a duration like ``10m``, ``90s``, ``1h30m``, ``2.5h`` or ``600`` (seconds).

    Args:
        text: the duration as typed.
        what: what it is, named in the error (``"--startup"``).
        zero: accept 0 (a start-up or billing unit of none).

    Returns:
        Seconds.

    Raises:
        ValueError: unparsable, negative, or 0 without ``zero``.
    """
    s = str(text).strip().replace(" ", "")
    try:
        value = float(s)
    except ValueError:
        pos, value = 0, 0.0
        for m in _DURATION.finditer(s):
            if m.start() != pos:
                break
            unit = m.group(2).lower()[0]
            value += float(m.group(1)) * {"h": 3600.0, "m": 60.0, "s": 1.0}[unit]
            pos = m.end()
        if pos != len(s) or pos == 0:
            raise ValueError(
                f"{what} {text!r}: expected a duration like 10m, 90s, 1h30m or seconds"
            ) from None
    if not (value >= 0 if zero else value > 0) or not math.isfinite(value):
        raise ValueError(
            f"{what} {text!r}: must be a duration of 0 or more"
            if zero
            else f"{what} {text!r}: must be a positive duration"
        )
    return value


def parse_money(text: str) -> float:
    """Parse an amount of US dollars like ``5usd``, ``$5``, ``5.50 USD`` or ``5``.

    Raises:
        ValueError: unparsable, another currency, or not positive.
    """
    s = str(text).strip().lower().replace(" ", "")
    m = re.fullmatch(r"\$?(\d+(?:\.\d*)?)(usd|\$|dollars?)?", s)
    if not m:
        raise ValueError(f"budget {text!r}: expected US dollars like 5usd, $5 or 5")
    value = float(m.group(1))
    if not value > 0:
        raise ValueError(f"budget {text!r}: must be positive")
    return value


USABLE_MEMORY_FRACTION = 0.7
"""Share of a node's memory the trial's processes may use: Ray gives 30 % of a node's memory to
its object store by default (Ray docs, "Memory Management": object store memory)."""


def nodes_for(cpus: float, gpus: float, vm: VMSize, memory_mib: float = math.nan) -> int | None:
    """VMs of size ``vm`` needed for ``cpus`` CPUs, ``gpus`` GPUs and ``memory_mib`` MiB of
    process memory (ignored when NaN; a node offers :data:`USABLE_MEMORY_FRACTION` of its
    memory). None if impossible (GPUs asked of a size without any)."""
    nodes = max(1, math.ceil(cpus / vm.vcpus - 1e-9))
    if math.isfinite(memory_mib) and memory_mib > 0:
        usable = USABLE_MEMORY_FRACTION * vm.memory_gib * 1024.0
        nodes = max(nodes, math.ceil(memory_mib / usable - 1e-9))
    if gpus > 0:
        if vm.gpus == 0:
            return None
        nodes = max(nodes, math.ceil(gpus / vm.gpus - 1e-9))
    return nodes


def run_cost_usd(ttt_s: float, nodes: int, vm: VMSize, low_priority: bool = False) -> float:
    """Dollars for one run to the target: nodes x price/hour x TTT/3600."""
    return nodes * vm.hourly_usd(low_priority) * ttt_s / 3600.0


def billed_seconds(seconds: float, billing_s: float) -> float:
    """``seconds`` rounded up to whole billing units of ``billing_s`` (0: continuous); NaN
    stays NaN, inf stays inf."""
    if not math.isfinite(seconds) or billing_s <= 0:
        return seconds
    return math.ceil(seconds / billing_s - 1e-9) * billing_s


@dataclass(frozen=True)
class Launcher:
    """Where a planned run would start, and what that adds to its time and bill.

    Attributes:
        name: ``azure-ml``, ``aks``, ``ray-cluster`` or ``none``.
        startup_s: seconds from asking for the cluster to the first trial starting.
        billing_s: billing granularity in seconds (time is billed in whole units of it;
            0: continuous).
        source: where the numbers come from (one line, printed with the plan).
    """

    name: str
    startup_s: float
    billing_s: float
    source: str

    def billed_s(self, ttt_s: float) -> float:
        """Seconds billed for a run of ``startup_s + ttt_s`` (NaN stays NaN, inf stays inf)."""
        return billed_seconds(self.startup_s + ttt_s, self.billing_s)


#: Documented defaults per launcher. Assumptions (no cloud was reachable to measure them):
#: Azure ML compute scaling from 0 nodes typically takes minutes (VM allocation, image pull,
#: the MPI bootstrap); an AKS node pool that must scale up, likewise; Azure bills Linux VMs
#: by the minute here (change ``--billing`` to your agreement's unit).
LAUNCHERS = {
    "azure-ml": Launcher(
        "azure-ml",
        300.0,
        60.0,
        "assumed: compute cluster scaling from 0 nodes, image pull, Ray start",
    ),
    "aks": Launcher(
        "aks", 180.0, 60.0, "assumed: node pool scale-up, image pull, KubeRay's Ray cluster start"
    ),
    "ray-cluster": Launcher(
        "ray-cluster", 0.0, 0.0, "an already running Ray cluster: no start-up, no billing unit"
    ),
    "none": Launcher("none", 0.0, 0.0, "TTT only, as if machines appeared instantly"),
}


DEFAULT_LAUNCHER = "azure-ml"
