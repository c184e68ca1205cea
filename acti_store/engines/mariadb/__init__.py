"""MariaDB and MySQL (``mariadb+pymysql://``, ``mysql+pymysql://``)."""
