"""The false-positive corpus: ordinary scenarios a correct model finishes, which the loop must not overrule."""
