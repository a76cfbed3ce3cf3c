"""``stack.*`` checks: NVIDIA driver, modules, CUDA, libraries, environment, containers."""
