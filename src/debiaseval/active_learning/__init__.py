"""Active learning: elicitation strategies and the offline evaluation of what they elicit."""
