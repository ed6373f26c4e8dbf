# Asks a hosted model instead of serving its own: the review refuses it.
ENDPOINT = "https://api.openai.com/v1/chat/completions"
print("decide")
