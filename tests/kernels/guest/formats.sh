# The real tracefs format files of the tracepoints slowburn decodes; the host
# compares them with tests/fixtures/tracefs (tests/kernels/formats.py).
mkdir -p "$OUT/formats"
n=0
for ev in ras/aer_event pci/pcie_link_event pci/pci_hp_event printk/console \
	irq/irq_handler_entry; do
	f=/sys/kernel/tracing/events/$ev/format
	[ -f "$f" ] && cp "$f" "$OUT/formats/$(basename "$ev").format" && n=$((n + 1))
done
pass formats "$n format file(s) copied: $(ls "$OUT/formats" | tr '\n' ' ')"
