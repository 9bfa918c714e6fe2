"""`topoeval view`: a local viewer over run folders (runs, pictures, episodes as conversations)."""
