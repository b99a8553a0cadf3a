import unittest

from shopcart import Cart, Invoice


def cart(*codes):
    c = Cart(codes=list(codes))
    c.add("MUG", 1250, 2)
    c.add("TEE", 1999)
    return c


class CartTest(unittest.TestCase):
    def test_subtotal_merges_skus(self):
        c = cart()
        c.add("MUG", 1250)
        self.assertEqual(len(c.items), 2)
        self.assertEqual(c.subtotal(), 3 * 1250 + 1999)

    def test_total_no_codes(self):
        self.assertEqual(cart().total(), 4499)

    def test_percent_then_flat(self):
        self.assertEqual(cart("flat5", "welcome10").total(), 4499 - 450 - 500)

    def test_percent_minimum(self):
        c = Cart(codes=["WELCOME10"])
        c.add("PIN", 1999)
        self.assertEqual(c.total(), 1999)

    def test_floor_at_zero(self):
        c = Cart(codes=["FLAT5"])
        c.add("STICKER", 300)
        self.assertEqual(c.total(), 0)


class InvoiceTest(unittest.TestCase):
    def test_from_cart(self):
        inv = Invoice.from_cart(cart("WELCOME10", "FLAT5", "BOGUS", "WELCOME10"))
        self.assertEqual(inv.subtotal, 4499)
        self.assertEqual(inv.net, 3549)
        self.assertEqual(inv.discount, 950)
        self.assertEqual(inv.codes, ["WELCOME10", "FLAT5"])
        self.assertEqual(inv.vat, 710)
        self.assertEqual(inv.gross, 4259)
        self.assertIn("discount", inv.render())


if __name__ == "__main__":
    unittest.main()
