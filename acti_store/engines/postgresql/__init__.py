"""PostgreSQL (``postgresql+psycopg://``): a store many processes and machines share."""
