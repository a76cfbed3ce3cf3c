"""What to do about NVIDIA's out-of-tree modules under Secure Boot, lockdown, signature
enforcement and IMA appraisal: the remedies the security posture checks share.

nvidia.ko (open or proprietary, from DKMS or the .run installer) is built on the node, so
no distribution key signed it. A kernel that enforces signatures (module.sig_enforce=1,
or lockdown=integrity, which Ubuntu, Fedora and RHEL kernels turn on with Secure Boot)
loads it only when it carries a signature from a key the kernel trusts: one built in, one
in the firmware's db, or a Machine Owner Key (MOK) that shim enrolled. Sources: the
kernel's admin-guide/module-signing.rst and kernel_lockdown(7); NVIDIA's driver
installation guide ("Secure Boot" and the .run installer's --module-signing-* options);
Ubuntu's UEFI/SecureBoot/DKMS page (update-secureboot-policy, /var/lib/shim-signed/mok);
DKMS 3's mok.key/mok.pub; the IMA policy ABI (func=MODULE_CHECK, appraise_type=imasig|modsig).
"""

from __future__ import annotations

MOK_ENROL = (
    "DKMS signs the nvidia modules it builds with its Machine Owner Key, which the kernel "
    "trusts only once shim has enrolled it: sudo mokutil --import /var/lib/shim-signed/mok/"
    "MOK.der (Ubuntu, Debian; sudo update-secureboot-policy --new-key makes one) or sudo "
    "mokutil --import /var/lib/dkms/mok.pub (DKMS 3: RHEL, Fedora, SUSE), choose a one-time "
    "password, reboot, and in MokManager (before GRUB, on the console or the BMC's) pick "
    "Enroll MOK, Continue, Yes and type it. Then check: mokutil --test-key <that key> says it "
    "is enrolled, modinfo -F signer nvidia names it, and dmesg has no 'Key was rejected by "
    "service'. DKMS signs every rebuild (a new kernel) with the same key: enrol once per "
    "node, not per update. Without a console for MokManager, install the distribution's "
    "pre-signed modules instead (Ubuntu: linux-modules-nvidia-<branch>-server-open-"
    "$(uname -r); RHEL: NVIDIA's precompiled kmod streams)."
)

LOCKDOWN_NVIDIA = (
    "lockdown=integrity makes the kernel refuse every module without a valid signature from a "
    "trusted key: an unsigned nvidia.ko (DKMS without a key, the .run installer without "
    "--module-signing-secret-key and --module-signing-public-key) fails to load ('Lockdown: "
    "modprobe: unsigned module loading is restricted', 'Key was rejected by service') and "
    "the node comes up with no GPU. Sign and enrol first, then turn lockdown on. "
)

IMA_NVIDIA = (
    "An IMA policy that appraises modules (appraise func=MODULE_CHECK, or ima_policy="
    "secure_boot) refuses nvidia.ko unless it carries an IMA signature (evmctl ima_sign, an "
    "xattr DKMS does not write) or, with appraise_type=imasig|modsig, an appended signature "
    "from a key on the .ima keyring (enrolling the DKMS key as a MOK does not put it there); "
    "sign the module for IMA before enforcing. A measure-only policy (ima_policy=tcb) records "
    "nvidia.ko in the measurement list and refuses nothing; dolmen integrity attest verify "
    "--ima replays that list against the TPM's PCR 10."
)
