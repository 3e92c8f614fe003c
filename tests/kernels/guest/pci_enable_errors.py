"""Enable a PCIe function's error reporting the way a driver would (no
setpci needed): SERR# in Command, and Correctable/Non-Fatal/Fatal/
Unsupported Request Reporting in the PCI Express capability's Device
Control. QEMU (7.2) forwards an error from a function only with both set.
Prints the registers before and after.
  pci_enable_errors.py /sys/bus/pci/devices/0000:01:00.0
"""
import struct
import sys

COMMAND, COMMAND_SERR = 0x04, 0x0100
CAP_POINTER, CAP_ID_EXP, DEVCTL, DEVCTL_REPORTING = 0x34, 0x10, 0x08, 0x000F

with open(sys.argv[1] + "/config", "r+b") as config:
    def word(offset, value=None):
        config.seek(offset)
        if value is None:
            return struct.unpack("<H", config.read(2))[0]
        config.write(struct.pack("<H", value))
        config.flush()
        return value

    config.seek(CAP_POINTER)
    cap = config.read(1)[0]
    while cap and word(cap) & 0xFF != CAP_ID_EXP:
        cap = word(cap) >> 8
    if not cap:
        sys.exit("%s: no PCI Express capability" % sys.argv[1])
    command, devctl = word(COMMAND), word(cap + DEVCTL)
    word(COMMAND, command | COMMAND_SERR)
    word(cap + DEVCTL, devctl | DEVCTL_REPORTING)
    print("Command 0x%04x -> 0x%04x, Device Control (cap 0x%02x) 0x%04x -> 0x%04x" % (
        command, word(COMMAND), cap, devctl, word(cap + DEVCTL)))
