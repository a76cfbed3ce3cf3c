"""``storage.*`` checks: free space, inodes, read-only and missing mounts, NVMe, I/O errors."""
