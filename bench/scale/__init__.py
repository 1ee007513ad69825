"""`python -m bench scale`: Folio's distributed deployment against GPU-paced vLLM stand-ins."""
