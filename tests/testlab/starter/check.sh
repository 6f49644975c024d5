#!/usr/bin/env bash
echo "not ready"
exit 1
