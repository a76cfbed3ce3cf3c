"""``gpu.*`` checks: inventory, memory errors, Xids, clocks, thermals, power, PCIe, fabric."""
