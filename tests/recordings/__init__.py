"""Every real recording of ../shared/recordings fed to ``validate`` alone (issue 8)."""
