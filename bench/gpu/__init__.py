"""`python -m bench gpu`: a decode step's floor, the loop stop's cost, logits writes, the
client's parse and training memory, measured on a GPU machine (`bash bench/gpu_device.sh`)."""
