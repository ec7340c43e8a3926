"""The dataset contract model: the whole `Contract` and its loading (`model`), and the parts it is made of (`parts`)."""
