"""Turn-taking: self-chat and bot-bot generation, seeding from a corpus, live chat."""
