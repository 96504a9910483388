// The example the page starts with: a little of every kind of state Elastic Lite handles,
// so one checkpoint shows each path — cloudpickle, the dill fallback, and a skipped variable.
export const EXAMPLE_CELLS = [
  `# 1. Plain data: numbers, text, containers
import math
prices = {"apple": 1.25, "pear": 0.80, "fig": 3.10}
history = [round(math.sin(i / 10), 3) for i in range(1000)]
shared = [1, 2, 3]
alias = {"same_list": shared}   # aliasing survives a restore: alias["same_list"] is shared
print(len(history), "points; prices add up to", sum(prices.values()))`,

  `# 2. A function and a class defined in the notebook (saved by value, no source needed)
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

  `# 3. Only dill can save this: cloudpickle refuses the lock, Elastic Lite rewinds and uses dill
import threading
tools = {"square": lambda x: x * x, "lock": threading.Lock()}
tools["square"](7)`,

  `# 4. Nothing can save a running generator: it is skipped, and the report says why
countdown = (n for n in range(10, 0, -1))
next(countdown)`,

  `# 5. After "Restore", run this cell: everything is back in the new Python
print("prices:", prices["fig"], "| history:", len(history), "| alias kept:", alias["same_list"] is shared)
print("function:", with_tax(10), "| instance:", basket.total(), isinstance(basket, Basket))
print("dill object:", tools["square"](9), "| lock works:", tools["lock"].acquire(blocking=False))
print("skipped:", "countdown" in globals())`,
];
