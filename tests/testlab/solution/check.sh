#!/usr/bin/env bash
echo ready
