#!/usr/bin/env bash
# 課題4: reports controller のリーダー(Lease を持つ Pod)の名前を1行で出力するコマンドを書きます。
# Task 4: print the name of the Pod that leads the reports controller (holds its Lease), one line.
