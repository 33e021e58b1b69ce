//! Local CreateOS and Kubernetes API emulators. See issue 3 and issue 7.
