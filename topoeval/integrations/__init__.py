"""Adapters to training frameworks (optional extras, imported lazily)."""
