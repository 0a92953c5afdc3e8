"""ICML 2025 in Code: one package per paper (``lib.<slug>``) plus shared helpers in
``lib.common``."""
