import unittest

from shopcart import Cart, Invoice
from shopcart.pricing import apply_discounts


class ApplyDiscountsTest(unittest.TestCase):
    def test_no_codes(self):
        self.assertEqual(apply_discounts(4499, []), (4499, []))

    def test_percent_then_flat_regardless_of_order(self):
        self.assertEqual(apply_discounts(4499, ["FLAT5", "WELCOME10"]), (3549, ["WELCOME10", "FLAT5"]))
        total, applied = apply_discounts(4499, ["WELCOME10", "FLAT5"])
        self.assertEqual(total, 3549)
        self.assertEqual(sorted(applied), ["FLAT5", "WELCOME10"])

    def test_codes_normalized(self):
        self.assertEqual(apply_discounts(5000, [" welcome10 "]), (4500, ["WELCOME10"]))

    def test_rounding_half_up(self):
        self.assertEqual(apply_discounts(2005, ["WELCOME10"]), (1804, ["WELCOME10"]))

    def test_minimum_not_met(self):
        self.assertEqual(apply_discounts(1999, ["WELCOME10"]), (1999, []))

    def test_each_kind_once_and_unknown_ignored(self):
        self.assertEqual(apply_discounts(10000, ["FLAT5", "FLAT5", "BOGUS", "WELCOME10", "WELCOME10"]),
                         (8500, ["WELCOME10", "FLAT5"]))

    def test_freeship_not_a_price_discount(self):
        self.assertEqual(apply_discounts(3000, ["FREESHIP"]), (3000, []))

    def test_floor_at_zero(self):
        self.assertEqual(apply_discounts(300, ["FLAT5"]), (0, ["FLAT5"]))

    def test_codes_list_not_modified(self):
        codes = ["flat5", "WELCOME10"]
        apply_discounts(4499, codes)
        self.assertEqual(codes, ["flat5", "WELCOME10"])


class CallersAgreeTest(unittest.TestCase):
    def check(self, items, codes):
        c = Cart(codes=list(codes))
        for sku, price, qty in items:
            c.add(sku, price, qty)
        total, applied = apply_discounts(c.subtotal(), codes)
        inv = Invoice.from_cart(c)
        self.assertEqual(c.total(), total)
        self.assertEqual(inv.net, total)
        self.assertEqual(inv.codes, applied)
        self.assertEqual(inv.discount, c.subtotal() - total)

    def test_agree(self):
        items = [("MUG", 1250, 2), ("TEE", 1999, 1)]
        for codes in ([], ["FLAT5"], ["WELCOME10"], ["flat5", "welcome10"], ["BOGUS"], ["WELCOME10", "WELCOME10"]):
            with self.subTest(codes=codes):
                self.check(items, codes)
        self.check([("STICKER", 300, 1)], ["FLAT5", "WELCOME10"])
        self.check([("PIN", 1999, 1)], ["WELCOME10"])


if __name__ == "__main__":
    unittest.main()
