// The example the page starts with: a little of every kind of state Elastic Lite handles,
// so one checkpoint shows each path — cloudpickle, the dill fallback, and a generator that
// no serializer can save, recomputed on restore by replaying the cells that made it.
// Lines stay under ~75 characters so the cells read without scrolling at 1280 px.
export const EXAMPLE_CELLS = [
  `# 1. Plain data: numbers, text, containers
import math
prices = {"apple": 1.25, "pear": 0.80, "fig": 3.10}
history = [round(math.sin(i / 10), 3) for i in range(1000)]
shared = [1, 2, 3]
# Aliasing survives a restore: alias["same_list"] is shared, still
alias = {"same_list": shared}
print(len(history), "points; prices add up to", sum(prices.values()))`,

  `# 2. A function and a class, defined in this notebook
#    (saved by value: the new Python needs no source file)
rate = 1.2

def with_tax(amount):
    return round(amount * rate, 2)

class Basket:
    def __init__(self, owner):
        self.owner = owner
        self.items = []

    def add(self, name, qty=1):
        self.items.append((name, qty))
        return self

    def total(self):
        return with_tax(sum(prices[n] * q for n, q in self.items))

basket = Basket("ada").add("apple", 3).add("fig")
print(basket.owner, "pays", basket.total())`,

  `# 3. Only dill can save this: cloudpickle refuses the lock,
#    so Elastic Lite rewinds its bytes and writes the dict with dill
import threading
tools = {"square": lambda x: x * x, "lock": threading.Lock()}
tools["square"](7)`,

  `# 4. Nothing can pickle a running generator: Elastic Lite
#    recomputes it on restore by re-running the cells that made
#    and advanced it (this one and cell 5), from where it was
countdown = (n for n in range(10, 0, -1))
next(countdown)`,

  `# 5. After "Restore", run this cell: everything is back
print("data:", prices["fig"], len(history), alias["same_list"] is shared)
print("function:", with_tax(10))
print("instance:", basket.total(), isinstance(basket, Basket))
with tools["lock"]:
    print("dill:", tools["square"](9), "| lock held:", tools["lock"].locked())
print("generator continues:", next(countdown))`,
];
