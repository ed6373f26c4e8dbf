#!/bin/sh
# The s1-fast-speed demo's fake sealed scorer (content/s1-fast-speed.md): a real scorer
# asks the entry at $REFEREE_ENGINE_URL (with $REFEREE_DECIDE_TOKEN) each sealed item of
# $REFEREE_SEALED_DIR and prints the share it got right. This stand-in asks nothing: it
# scores every entry 3 items right of however many the set holds, so both gates hold
# and the round is decided on cost. It prints one line, the score in ppm, and nothing else.
items=$(ls "$REFEREE_SEALED_DIR" | wc -l)
echo $((3 * 1000000 / items))
