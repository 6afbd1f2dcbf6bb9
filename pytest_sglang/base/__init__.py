"""Shared utilities every layer may use: errors, the secret scrubber, bounded file reads and safe writes, text shortening, read tracking and lazy exports; nothing here knows SGLang."""
