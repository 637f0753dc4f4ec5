"""Tested helpers for the lessons of "Attention, built by hand".

Each lesson builds an idea naively, then asserts it equals the vectorised version here.
One module per idea: positional, attention, masks, multihead, blocks, plotting, widgets, exercises.
"""
