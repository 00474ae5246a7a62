#!/bin/sh
echo "pagelock: coverage tools are not available in this offline build (remote_coverage_tools is a placeholder)" >&2
exit 1
