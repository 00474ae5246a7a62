"""The parts of tools/qualify.py: preflight, plan, running, verdict, publishing, the mutation
hook and signals."""
