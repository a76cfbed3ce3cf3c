"""What an administrator runs for each action of the Xid catalogue and each GPU recovery action.

The catalogue (``kb/data/xids.toml``) names actions (``reset_gpu``,
``drain_and_service``...); the driver names recovery actions (``gpu_recovery_action``:
None, GPU Reset, Node Reboot, Drain P2P, Drain and Reset; NVML
``nvmlDeviceGpuRecoveryAction_t``). Both become remedy templates here (checks/remedy.py):
``<bus id>`` where the command takes the GPU and the caller names none, ``<drain>`` for the
scheduler's drain command; the runner fills both with this finding's and this node's values.
"""

from __future__ import annotations

DRAIN = "drain the node (<drain>)"


def action_remedy(action: str, gpu: str | None = None) -> str:
    """The remedy text of a catalogue action; ``gpu`` is what ``nvidia-smi -i`` takes."""
    i = f" -i {gpu or '<bus id>'}"
    texts = {
        "none": "No action needed: informational.",
        "restart_app": (
            "Restart the application and check its code (illegal address, out-of-range "
            "access). Only if the same Xid repeats on this GPU across different jobs, run "
            "dcgmi diag -r 3 while the GPU is idle."
        ),
        "reset_gpu": (
            f"{DRAIN.capitalize()}, stop the processes on the GPU, reset it "
            f"(nvidia-smi -r{i}) and run dcgmi diag -r 2; service the GPU if the error returns."
        ),
        "reboot": f"{DRAIN.capitalize()} and reboot it; open a support case if the error returns.",
        "drain_and_service": (
            f"{DRAIN.capitalize()}, collect nvidia-bug-report.sh, and open a hardware service "
            "case; do not return the GPU to jobs."
        ),
        "check_nvlink": (
            f"Check the links (nvidia-smi nvlink -s{i}; nvidia-smi nvlink -e{i}); {DRAIN}, "
            f"reset the GPU (nvidia-smi -r{i}) and service the baseboard if links stay down."
        ),
        "follow_recovery_action": (
            f"Do what the GPU asks: nvidia-smi -q{i} | grep -i 'recovery action' "
            "(GPU Reset, Node Reboot, Drain P2P, Drain and Reset)."
        ),
        "check_link": "Check the cable and the switch port; reseat or replace the cable.",
        "check_pcie": (
            "Reseat the card or riser; check lspci -vvv for the link state and the slot's "
            "AER errors."
        ),
    }
    return texts.get(action, f"Look up the Xid in NVIDIA's Xid catalogue (action {action!r}).")


def recovery_remedy(action: str, gpu: str | None = None) -> str:
    """The remedy for a ``gpu_recovery_action`` the driver reports (None when none needed)."""
    i = f" -i {gpu or '<bus id>'}"
    key = action.lower().replace("_", " ")
    if "drain" in key and "p2p" in key:
        return (
            f"Stop peer-to-peer (NVLink) work on this GPU: {DRAIN}, let jobs finish, then reset "
            f"the GPU (nvidia-smi -r{i})."
        )
    if "drain" in key:
        return (
            f"{DRAIN.capitalize()}, let running jobs finish, then reset the GPU (nvidia-smi -r{i})."
        )
    if "reboot" in key:
        return f"{DRAIN.capitalize()} and reboot it (the GPU asks for a node reboot)."
    if "reset" in key:
        return f"{DRAIN.capitalize()}, stop the GPU's processes and reset it (nvidia-smi -r{i})."
    return f"The GPU asks for recovery action {action!r}: {DRAIN} and follow NVIDIA's guidance."


def needs_recovery(action: str | None) -> bool:
    """Whether a reported recovery action asks for something (``None``/``0`` do not)."""
    return action is not None and action.strip().lower() not in ("none", "0", "0x0", "")
