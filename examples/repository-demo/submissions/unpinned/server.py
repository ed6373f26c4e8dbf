print("decide")
