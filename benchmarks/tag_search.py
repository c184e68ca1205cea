"""Time searches by 1, 4 and 10 tags on a small store, and the refusal of 1,000 tags.

    python -m benchmarks.tag_search sqlite:////tmp/tags.db
    python -m benchmarks.tag_search postgresql+psycopg://postgres@127.0.0.1:5432/test --schema s

Five agents with ten tags each (the most an agent has); each search runs 20 times, the median
is printed. A search for more than 10 tags is refused before any SQL (issue 25: 1,000 tags used
to run for minutes on PostgreSQL).
"""

from __future__ import annotations

import argparse
import statistics
import time

from acti_store import AgentConfig, SearchQuery, open_repository


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--schema")
    args = parser.parse_args()
    with open_repository(args.url, schema=args.schema) as repo:
        for i in range(5):
            if not repo.exists(f"probe_{i}"):
                repo.create(
                    AgentConfig(
                        name=f"probe_{i}",
                        description="A probe agent for tag searches",
                        system_prompt="You are a probe agent used to time tag searches in the "
                        "store, nothing more.",
                        tags=[f"t{j}" for j in range(10)],
                    )
                )
        for count in (1, 4, 10):
            query = SearchQuery(tags=[f"t{j}" for j in range(count)])
            runs = []
            for _ in range(20):
                start = time.perf_counter()
                repo.search(query)
                runs.append(time.perf_counter() - start)
            print(f"{count:>4} tags: {statistics.median(runs) * 1000:.2f} ms median")
        start = time.perf_counter()
        try:
            SearchQuery(tags=[f"x{j}" for j in range(1000)])
        except ValueError:
            print(f"1000 tags: refused in {(time.perf_counter() - start) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
